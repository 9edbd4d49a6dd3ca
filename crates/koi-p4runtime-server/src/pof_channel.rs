//! The `koi.pof.v1.Pof` gRPC service: the POF controller channel (docs/pof.md). A controller
//! reads a device's POF configuration and changes it over the network, as `koi ctl pof_*`
//! does locally; the changes go through the same commands (`koi_runtime::pof`), so each is
//! compiled and swapped in (or written) exactly as those are, with the state kept.
//!
//! Messages are converted to koi-pof's model here (names checked to be identifiers, values
//! to fit 128 bits). A whole configuration goes to `koi_runtime::pof::load_config`; each
//! change of a `Write` to its `pof_*` command in the text format, which the command parses
//! and checks as it checks `koi ctl`'s. Changing needs the P4Runtime primary's election id for the device and
//! role, so one controller owns a device whichever channel it writes through.

use crate::Devices;
use crate::arbitration::election_id;
use crate::device::Device;
use crate::status::status;
use koi_pof as pof;
use koi_proto::pof as pb;
use koi_proto::pof::pof_server::Pof;
use std::sync::Arc;
use tonic::{Code, Request, Response, Status};

/// The service over the switch's devices.
pub struct PofService {
    devices: Arc<Devices>,
}

impl PofService {
    pub(crate) fn new(devices: Arc<Devices>) -> PofService {
        PofService { devices }
    }

    fn device(&self, id: u64) -> Result<Arc<Device>, Status> {
        self.devices
            .get(id)
            .ok_or_else(|| status(Code::NotFound, format!("no device {id}")))
    }
}

fn invalid(m: impl Into<String>) -> Status {
    status(Code::InvalidArgument, m)
}

/// The running POF configuration of `d` (empty before any program).
fn current(d: &Device) -> Result<Arc<pof::Config>, Status> {
    match d.pipeline.image() {
        None => Ok(Arc::new(pof::Config::default())),
        Some(img) => img.program().pof_config().ok_or_else(|| {
            status(
                Code::FailedPrecondition,
                format!(
                    "device {} runs the P4 program {}, not a POF configuration (SetConfig replaces it)",
                    d.pipeline.device_id(),
                    img.program().name
                ),
            )
        }),
    }
}

/// Runs `change` on `d`'s pipeline away from the async threads (a change compiles and
/// swaps, or writes tables); its refusal is INVALID_ARGUMENT.
async fn blocking(
    d: &Arc<Device>,
    change: impl FnOnce(&koi_runtime::Pipeline) -> Result<String, String> + Send + 'static,
) -> Result<String, Status> {
    let d = Arc::clone(d);
    tokio::task::spawn_blocking(move || change(&d.pipeline))
        .await
        .map_err(|e| status(Code::Internal, format!("POF change: {e}")))?
        .map_err(invalid)
}

/// Runs `pof_*` command `cmd` with `args` on `d`'s pipeline.
async fn run(d: &Arc<Device>, cmd: &'static str, args: Vec<String>) -> Result<String, Status> {
    blocking(d, move |pl| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        koi_runtime::pof::command(pl, cmd, &args)
    })
    .await
}

#[tonic::async_trait]
impl Pof for PofService {
    async fn get_config(
        &self,
        request: Request<pb::GetConfigRequest>,
    ) -> Result<Response<pb::GetConfigResponse>, Status> {
        let d = self.device(request.get_ref().device_id)?;
        let c = current(&d)?;
        Ok(Response::new(pb::GetConfigResponse {
            config: Some(to_proto(&c)),
            text: pof::print(&c),
        }))
    }

    async fn set_config(
        &self,
        request: Request<pb::SetConfigRequest>,
    ) -> Result<Response<pb::SetConfigResponse>, Status> {
        let req = request.into_inner();
        let d = self.device(req.device_id)?;
        d.check_primary(&req.role, election_id(&req.election_id))?;
        let config = match &req.config {
            Some(c) => from_proto(c)?,
            None => pof::parse(&req.text).map_err(|e| invalid(e.render("text")))?,
        };
        let reset = req.reset;
        let report = blocking(&d, move |pl| {
            koi_runtime::pof::load_config(pl, "configuration", config, reset)
        })
        .await?;
        Ok(Response::new(pb::SetConfigResponse { report }))
    }

    async fn write(
        &self,
        request: Request<pb::WriteRequest>,
    ) -> Result<Response<pb::WriteResponse>, Status> {
        let req = request.into_inner();
        let d = self.device(req.device_id)?;
        d.check_primary(&req.role, election_id(&req.election_id))?;
        let mut reports = Vec::new();
        for (i, ch) in req.changes.iter().enumerate() {
            let at = |e: Status| {
                status(
                    e.code(),
                    format!(
                        "change {i}: {} ({} before it applied)",
                        e.message(),
                        reports.len()
                    ),
                )
            };
            let (cmd, args) = command_of(&d, ch).map_err(at)?;
            let report = run(&d, cmd, args).await.map_err(at)?;
            reports.push(report);
        }
        Ok(Response::new(pb::WriteResponse { reports }))
    }
}

/// The `pof_*` command and arguments that make change `ch`, checked against `d`'s running
/// configuration (NOT_FOUND, ALREADY_EXISTS) where the check is simple.
fn command_of(d: &Device, ch: &pb::Change) -> Result<(&'static str, Vec<String>), Status> {
    use pb::change::Change as C;
    let c = current(d)?;
    let text = |frag: pof::Config| vec![pof::print(&frag)];
    let not_found = |what: String| status(Code::NotFound, format!("no {what}"));
    let exists = |what: String| status(Code::AlreadyExists, format!("{what} exists"));
    let has_table = |n: &str| match c.table(n) {
        Some(_) => Ok(()),
        None => Err(not_found(format!("table {n}"))),
    };
    let Some(ch) = &ch.change else {
        return Err(invalid("a change with nothing in it"));
    };
    Ok(match ch {
        C::AddProtocol(p) => {
            let p = protocol(p)?;
            if c.protocol(&p.name).is_some() {
                return Err(exists(format!("protocol {}", p.name)));
            }
            let frag = pof::Config {
                protocols: vec![p],
                ..Default::default()
            };
            ("pof_protocol_add", text(frag))
        }
        C::AddMetadata(m) => {
            let frag = pof::Config {
                metadata: m.fields.iter().map(field).collect::<Result<_, _>>()?,
                ..Default::default()
            };
            if frag.metadata.is_empty() {
                return Err(invalid("add_metadata without fields"));
            }
            ("pof_protocol_add", text(frag))
        }
        C::RemoveProtocol(n) => {
            ident(n, "protocol name")?;
            if c.protocol(n).is_none() {
                return Err(not_found(format!("protocol {n}")));
            }
            ("pof_protocol_remove", vec![n.clone()])
        }
        C::AddTable(t) => {
            let t = table(t)?;
            if c.table(&t.name).is_some() {
                return Err(exists(format!("table {}", t.name)));
            }
            let frag = pof::Config {
                tables: vec![t],
                ..Default::default()
            };
            ("pof_table_add", text(frag))
        }
        C::RemoveTable(n) => {
            ident(n, "table name")?;
            has_table(n)?;
            ("pof_table_remove", vec![n.clone()])
        }
        C::SetFirstTable(n) => {
            ident(n, "table name")?;
            has_table(n)?;
            let frag = pof::Config {
                first: Some(n.clone()),
                ..Default::default()
            };
            ("pof_table_add", text(frag))
        }
        C::AddEntry(e) | C::ModifyEntry(e) => {
            let modify = matches!(ch, C::ModifyEntry(_));
            let e = entry(e)?;
            has_table(&e.table)?;
            let there = c.entries_of(&e.table).any(|x| x.id == e.id);
            match (modify, there) {
                (true, false) => {
                    return Err(not_found(format!("entry {} in table {}", e.id, e.table)));
                }
                (false, true) => {
                    return Err(exists(format!("entry {} in table {}", e.id, e.table)));
                }
                _ => {}
            }
            let frag = pof::Config {
                entries: vec![e],
                ..Default::default()
            };
            let cmd = if modify {
                "pof_entry_modify"
            } else {
                "pof_entry_add"
            };
            (cmd, text(frag))
        }
        C::SetMiss(m) => {
            let m = miss(m)?;
            has_table(&m.table)?;
            let frag = pof::Config {
                misses: vec![m],
                ..Default::default()
            };
            ("pof_miss_set", text(frag))
        }
        C::RemoveMiss(t) => {
            ident(t, "table name")?;
            if c.miss_of(t).is_none() {
                return Err(not_found(format!("miss of table {t}")));
            }
            ("pof_miss_remove", vec![t.clone()])
        }
        C::RemoveEntry(r) => {
            ident(&r.table, "table name")?;
            if !c.entries_of(&r.table).any(|x| x.id == r.id) {
                return Err(not_found(format!("entry {} in table {}", r.id, r.table)));
            }
            ("pof_entry_remove", vec![r.table.clone(), r.id.to_string()])
        }
    })
}

/// `s` is a name the text format takes as one word.
fn ident(s: &str, what: &str) -> Result<(), Status> {
    let mut chars = s.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(invalid(format!(
            "{what} {s:?}: a name is a letter or `_` followed by letters, digits and `_`"
        )))
    }
}

/// A big-endian value of at most 16 bytes.
fn value(b: &[u8], what: &str) -> Result<u128, Status> {
    let b = &b[b.iter().take_while(|&&x| x == 0).count()..];
    if b.len() > 16 {
        return Err(invalid(format!("{what}: wider than 128 bits")));
    }
    Ok(b.iter().fold(0u128, |v, &x| (v << 8) | u128::from(x)))
}

/// `v` as the shortest big-endian bytes (one byte for zero).
fn bytes(v: u128) -> Vec<u8> {
    let b = v.to_be_bytes();
    let skip = b.iter().take_while(|&&x| x == 0).count().min(15);
    b[skip..].to_vec()
}

fn field(f: &pb::Field) -> Result<pof::Field, Status> {
    ident(&f.name, "field name")?;
    Ok(pof::Field {
        name: f.name.clone(),
        offset: f.offset,
        length: f.length,
        at: Default::default(),
    })
}

fn protocol(p: &pb::Protocol) -> Result<pof::Protocol, Status> {
    ident(&p.name, "protocol name")?;
    Ok(pof::Protocol {
        name: p.name.clone(),
        fields: p.fields.iter().map(field).collect::<Result<_, _>>()?,
        at: Default::default(),
    })
}

fn field_ref(f: Option<&pb::FieldRef>) -> Result<pof::FieldRef, Status> {
    use pb::field_ref::Ref;
    match f.and_then(|f| f.r#ref.as_ref()) {
        Some(Ref::Packet(p)) => {
            ident(&p.protocol, "protocol name")?;
            ident(&p.field, "field name")?;
            Ok(pof::FieldRef::Packet {
                protocol: p.protocol.clone(),
                field: p.field.clone(),
                base: p.base,
            })
        }
        Some(Ref::Metadata(m)) => {
            ident(m, "metadata field name")?;
            Ok(pof::FieldRef::Meta(m.clone()))
        }
        None => Err(invalid("a field reference with no field")),
    }
}

fn table(t: &pb::Table) -> Result<pof::Table, Status> {
    ident(&t.name, "table name")?;
    let kind = match pb::MatchKind::try_from(t.kind) {
        Ok(pb::MatchKind::Exact) => pof::MatchKind::Exact,
        Ok(pb::MatchKind::Lpm) => pof::MatchKind::Lpm,
        Ok(pb::MatchKind::Ternary) => pof::MatchKind::Ternary,
        Err(_) => return Err(invalid(format!("table {}: match kind {}", t.name, t.kind))),
    };
    Ok(pof::Table {
        name: t.name.clone(),
        kind,
        size: if t.size == 0 {
            pof::model::DEFAULT_TABLE_SIZE
        } else {
            t.size
        },
        keys: t
            .keys
            .iter()
            .map(|k| field_ref(Some(k)))
            .collect::<Result<_, _>>()?,
        at: Default::default(),
    })
}

fn entry(e: &pb::Entry) -> Result<pof::Entry, Status> {
    use pb::r#match::Match as M;
    ident(&e.table, "table name")?;
    let matches = e
        .matches
        .iter()
        .map(|m| {
            Ok(match &m.r#match {
                Some(M::Exact(v)) => pof::MatchValue::Exact(value(v, "exact match")?),
                Some(M::Prefix(p)) => pof::MatchValue::Prefix(value(&p.value, "prefix")?, p.length),
                Some(M::Masked(m)) => pof::MatchValue::Masked(
                    value(&m.value, "masked value")?,
                    value(&m.mask, "mask")?,
                ),
                Some(M::Any(_)) => pof::MatchValue::Any,
                None => return Err(invalid("a match with nothing in it")),
            })
        })
        .collect::<Result<_, Status>>()?;
    let instructions = instructions(&e.instructions)?;
    Ok(pof::Entry {
        table: e.table.clone(),
        id: e.id,
        priority: e.priority,
        matches,
        instructions,
        at: Default::default(),
    })
}

/// An instruction list (an `APPLY_ACTIONS` is its actions one after the other).
fn instructions(list: &[pb::Instruction]) -> Result<Vec<pof::Instruction>, Status> {
    use pb::instruction::Instruction as I;
    let mut out = Vec::new();
    for i in list {
        match &i.instruction {
            Some(I::GotoTable(g)) => {
                ident(&g.table, "table name")?;
                out.push(pof::Instruction::Goto {
                    table: g.table.clone(),
                    shift: g.shift,
                });
            }
            Some(I::WriteMetadata(w)) => {
                ident(&w.field, "metadata field name")?;
                out.push(pof::Instruction::WriteMetadata {
                    field: w.field.clone(),
                    value: value(&w.value, "write_metadata")?,
                });
            }
            Some(I::Meter(m)) => out.push(pof::Instruction::Meter(*m)),
            Some(I::ApplyActions(a)) => {
                for a in &a.actions {
                    out.push(pof::Instruction::Apply(action(a)?));
                }
            }
            None => return Err(invalid("an instruction with nothing in it")),
        }
    }
    Ok(out)
}

fn miss(m: &pb::Miss) -> Result<pof::model::Miss, Status> {
    ident(&m.table, "table name")?;
    Ok(pof::model::Miss {
        table: m.table.clone(),
        instructions: instructions(&m.instructions)?,
        at: Default::default(),
    })
}

fn action(a: &pb::Action) -> Result<pof::Action, Status> {
    use pb::action::Action as A;
    Ok(match &a.action {
        Some(A::Output(p)) => pof::Action::Output(*p),
        Some(A::OutputField(f)) => pof::Action::OutputField(field_ref(Some(f))?),
        Some(A::Drop(_)) => pof::Action::Drop,
        Some(A::PacketIn(_)) => pof::Action::PacketIn,
        Some(A::SetField(s)) => {
            pof::Action::SetField(field_ref(s.field.as_ref())?, value(&s.value, "set_field")?)
        }
        Some(A::SetFieldFromMetadata(s)) => {
            ident(&s.metadata, "metadata field name")?;
            pof::Action::SetFieldFromMetadata(field_ref(s.field.as_ref())?, s.metadata.clone())
        }
        Some(A::ModifyField(m)) => {
            pof::Action::ModifyField(field_ref(m.field.as_ref())?, i128::from(m.delta))
        }
        Some(A::AddField(f)) => pof::Action::AddField {
            offset: f.offset,
            length: f.length,
            value: f.value.clone(),
        },
        Some(A::DeleteField(f)) => pof::Action::DeleteField {
            offset: f.offset,
            length: f.length,
        },
        Some(A::CalculateChecksum(c)) => pof::Action::CalculateChecksum {
            field: field_ref(c.field.as_ref())?,
            offset: c.offset,
            length: c.length,
        },
        Some(A::Counter(n)) => pof::Action::Counter(*n),
        Some(A::Group(g)) => pof::Action::Group(*g),
        None => return Err(invalid("an action with nothing in it")),
    })
}

/// A whole configuration from its message.
pub fn from_proto(c: &pb::Config) -> Result<pof::Config, Status> {
    Ok(pof::Config {
        protocols: c.protocols.iter().map(protocol).collect::<Result<_, _>>()?,
        metadata: c.metadata.iter().map(field).collect::<Result<_, _>>()?,
        tables: c.tables.iter().map(table).collect::<Result<_, _>>()?,
        first: match c.first_table.as_str() {
            "" => None,
            f => {
                ident(f, "table name")?;
                Some(f.to_string())
            }
        },
        entries: c.entries.iter().map(entry).collect::<Result<_, _>>()?,
        misses: c.misses.iter().map(miss).collect::<Result<_, _>>()?,
        cpu_port: (c.cpu_port != 0).then_some(c.cpu_port),
        counters: (c.counters != 0).then_some(c.counters),
        meters: (c.meters != 0).then_some(c.meters),
    })
}

fn field_to(f: &pof::Field) -> pb::Field {
    pb::Field {
        name: f.name.clone(),
        offset: f.offset,
        length: f.length,
    }
}

fn ref_to(f: &pof::FieldRef) -> pb::FieldRef {
    use pb::field_ref::Ref;
    pb::FieldRef {
        r#ref: Some(match f {
            pof::FieldRef::Packet {
                protocol,
                field,
                base,
            } => Ref::Packet(pb::PacketField {
                protocol: protocol.clone(),
                field: field.clone(),
                base: *base,
            }),
            pof::FieldRef::Meta(m) => Ref::Metadata(m.clone()),
        }),
    }
}

fn action_to(a: &pof::Action) -> pb::Action {
    use pb::action::Action as A;
    let action = match a {
        pof::Action::Output(p) => A::Output(*p),
        pof::Action::OutputField(f) => A::OutputField(ref_to(f)),
        pof::Action::Drop => A::Drop(pb::Empty {}),
        pof::Action::PacketIn => A::PacketIn(pb::Empty {}),
        pof::Action::SetField(f, v) => A::SetField(pb::SetField {
            field: Some(ref_to(f)),
            value: bytes(*v),
        }),
        pof::Action::SetFieldFromMetadata(f, m) => {
            A::SetFieldFromMetadata(pb::SetFieldFromMetadata {
                field: Some(ref_to(f)),
                metadata: m.clone(),
            })
        }
        pof::Action::ModifyField(f, d) => A::ModifyField(pb::ModifyField {
            field: Some(ref_to(f)),
            // (The text format takes wider deltas; a field is at most 128 bits.)
            delta: (*d).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64,
        }),
        pof::Action::AddField {
            offset,
            length,
            value,
        } => A::AddField(pb::AddField {
            offset: *offset,
            length: *length,
            value: value.clone(),
        }),
        pof::Action::DeleteField { offset, length } => A::DeleteField(pb::DeleteField {
            offset: *offset,
            length: *length,
        }),
        pof::Action::CalculateChecksum {
            field,
            offset,
            length,
        } => A::CalculateChecksum(pb::CalculateChecksum {
            field: Some(ref_to(field)),
            offset: *offset,
            length: *length,
        }),
        pof::Action::Counter(n) => A::Counter(*n),
        pof::Action::Group(g) => A::Group(*g),
    };
    pb::Action {
        action: Some(action),
    }
}

/// An instruction list as messages (actions one after the other as one `APPLY_ACTIONS`).
fn instructions_to(list: &[pof::Instruction]) -> Vec<pb::Instruction> {
    use pb::instruction::Instruction as I;
    let mut instructions: Vec<pb::Instruction> = Vec::new();
    for i in list {
        let next = match i {
            pof::Instruction::Goto { table, shift } => I::GotoTable(pb::GotoTable {
                table: table.clone(),
                shift: *shift,
            }),
            pof::Instruction::WriteMetadata { field, value } => {
                I::WriteMetadata(pb::WriteMetadata {
                    field: field.clone(),
                    value: bytes(*value),
                })
            }
            pof::Instruction::Meter(m) => I::Meter(*m),
            pof::Instruction::Apply(a) => {
                if let Some(pb::Instruction {
                    instruction: Some(I::ApplyActions(list)),
                }) = instructions.last_mut()
                {
                    list.actions.push(action_to(a));
                    continue;
                }
                I::ApplyActions(pb::ApplyActions {
                    actions: vec![action_to(a)],
                })
            }
        };
        instructions.push(pb::Instruction {
            instruction: Some(next),
        });
    }
    instructions
}

fn entry_to(e: &pof::Entry) -> pb::Entry {
    use pb::r#match::Match as M;
    let instructions = instructions_to(&e.instructions);
    pb::Entry {
        table: e.table.clone(),
        id: e.id,
        priority: e.priority,
        matches: e
            .matches
            .iter()
            .map(|m| pb::Match {
                r#match: Some(match m {
                    pof::MatchValue::Exact(v) => M::Exact(bytes(*v)),
                    pof::MatchValue::Prefix(v, l) => M::Prefix(pb::Prefix {
                        value: bytes(*v),
                        length: *l,
                    }),
                    pof::MatchValue::Masked(v, m) => M::Masked(pb::Masked {
                        value: bytes(*v),
                        mask: bytes(*m),
                    }),
                    pof::MatchValue::Any => M::Any(pb::Any {}),
                }),
            })
            .collect(),
        instructions,
    }
}

/// A whole configuration as its message.
pub fn to_proto(c: &pof::Config) -> pb::Config {
    pb::Config {
        protocols: c
            .protocols
            .iter()
            .map(|p| pb::Protocol {
                name: p.name.clone(),
                fields: p.fields.iter().map(field_to).collect(),
            })
            .collect(),
        metadata: c.metadata.iter().map(field_to).collect(),
        tables: c
            .tables
            .iter()
            .map(|t| pb::Table {
                name: t.name.clone(),
                kind: match t.kind {
                    pof::MatchKind::Exact => pb::MatchKind::Exact,
                    pof::MatchKind::Lpm => pb::MatchKind::Lpm,
                    pof::MatchKind::Ternary => pb::MatchKind::Ternary,
                } as i32,
                size: t.size,
                keys: t.keys.iter().map(ref_to).collect(),
            })
            .collect(),
        first_table: c.first.clone().unwrap_or_default(),
        entries: c.entries.iter().map(entry_to).collect(),
        misses: c
            .misses
            .iter()
            .map(|m| pb::Miss {
                table: m.table.clone(),
                instructions: instructions_to(&m.instructions),
            })
            .collect(),
        cpu_port: c.cpu_port.unwrap_or(0),
        counters: c.counters.unwrap_or(0),
        meters: c.meters.unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KPOFVS: &str = include_str!("../../../examples/pof/kpofvs.pof");

    #[test]
    fn a_configuration_goes_through_its_message_unchanged() {
        let c = pof::parse(&format!("{KPOFVS}\nmiss ipv4_fwd {{ counter 9 output 3 }}")).unwrap();
        assert!(!c.entries.is_empty() && !c.tables.is_empty() && !c.misses.is_empty());
        let back = from_proto(&to_proto(&c)).unwrap();
        assert_eq!(back, c);
        assert_eq!(pof::parse(&pof::print(&back)).unwrap(), c);
    }

    #[test]
    fn names_that_are_not_one_word_and_values_over_128_bits_are_refused() {
        let mut c = to_proto(&pof::parse(KPOFVS).unwrap());
        c.tables[0].name = "t } table evil exact { key meta.x".into();
        let e = from_proto(&c).unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument);
        assert!(e.message().contains("table name"), "{e:?}");
        assert_eq!(value(&[0; 20], "v").unwrap(), 0, "leading zeros are fine");
        let e = value(&[1; 17], "v").unwrap_err();
        assert!(e.message().contains("128 bits"), "{e:?}");
        assert_eq!(bytes(0), vec![0]);
        assert_eq!(bytes(0x1234), vec![0x12, 0x34]);
        assert_eq!(value(&bytes(u128::MAX), "v").unwrap(), u128::MAX);
    }
}
