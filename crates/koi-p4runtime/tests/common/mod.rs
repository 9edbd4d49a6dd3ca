//! Shared test rig: compiles a test program, builds its P4Info, koi-state and Target, and
//! builds and sends P4Runtime messages.

#![allow(dead_code)]

use koi_p4runtime::{Effect, P4Error, Target, Undo};
use koi_proto::p4info::P4Info;
use koi_proto::p4runtime::{
    self as p4, Entity, FieldMatch, TableEntry, Update, entity::Entity as E,
    field_match::FieldMatchType as F, table_action::Type as A, update::Type,
};
use koi_state::State;
use std::path::Path;
use tonic::Code;

/// A compiled program with its state and codec.
pub struct Rig {
    pub t: Target,
    pub s: State,
    pub info: P4Info,
    pub pipeline: koi_ir::Pipeline,
}

/// Compiles `tests/programs/<file>` and builds everything.
pub fn rig(file: &str) -> Rig {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs")
        .join(file);
    let c = match koi_conformance::compile(&path, &koi_syntax::PpOptions::default()) {
        Ok(c) => c,
        Err(e) => panic!("{}", e.render()),
    };
    let info = koi_p4info::generate(&c.pipeline).expect("P4Info");
    let s = State::new(&c.pipeline).expect("state");
    let t = Target::new(info.clone(), &s).expect("target");
    Rig {
        t,
        s,
        info,
        pipeline: c.pipeline,
    }
}

fn id_of<'a>(
    pres: impl Iterator<Item = &'a Option<koi_proto::p4info::Preamble>>,
    name: &str,
) -> u32 {
    pres.flatten()
        .find(|p| p.name == name || p.alias == name)
        .map(|p| p.id)
        .unwrap_or_else(|| panic!("no P4Info object {name}"))
}

impl Rig {
    pub fn table(&self, name: &str) -> u32 {
        id_of(self.info.tables.iter().map(|x| &x.preamble), name)
    }
    pub fn action(&self, name: &str) -> u32 {
        id_of(self.info.actions.iter().map(|x| &x.preamble), name)
    }
    pub fn profile(&self, name: &str) -> u32 {
        id_of(self.info.action_profiles.iter().map(|x| &x.preamble), name)
    }
    pub fn counter(&self, name: &str) -> u32 {
        id_of(self.info.counters.iter().map(|x| &x.preamble), name)
    }
    pub fn meter(&self, name: &str) -> u32 {
        id_of(self.info.meters.iter().map(|x| &x.preamble), name)
    }
    pub fn register(&self, name: &str) -> u32 {
        id_of(self.info.registers.iter().map(|x| &x.preamble), name)
    }
    pub fn value_set(&self, name: &str) -> u32 {
        id_of(self.info.value_sets.iter().map(|x| &x.preamble), name)
    }
    pub fn digest(&self, name: &str) -> u32 {
        id_of(self.info.digests.iter().map(|x| &x.preamble), name)
    }

    /// Applies one update with a fresh undo log.
    pub fn apply(&mut self, ty: Type, e: E) -> Result<Effect, P4Error> {
        let mut undo = Undo::default();
        koi_p4runtime::apply(&mut self.t, &mut self.s, &update(ty, e), &mut undo)
    }
    pub fn insert(&mut self, e: E) -> Result<Effect, P4Error> {
        self.apply(Type::Insert, e)
    }
    pub fn modify(&mut self, e: E) -> Result<Effect, P4Error> {
        self.apply(Type::Modify, e)
    }
    pub fn delete(&mut self, e: E) -> Result<Effect, P4Error> {
        self.apply(Type::Delete, e)
    }
    /// The code of a refused update (panics if it succeeded).
    pub fn refused(&mut self, ty: Type, e: E) -> Code {
        match self.apply(ty, e) {
            Ok(_) => panic!("update accepted"),
            Err(err) => {
                assert!(!err.message.is_empty());
                err.code
            }
        }
    }
    pub fn read(&self, e: E) -> Result<Vec<E>, P4Error> {
        let mut out = Vec::new();
        koi_p4runtime::read(&self.t, &self.s, &Entity { entity: Some(e) }, &mut |x| {
            out.push(x.entity.expect("entity"))
        })?;
        Ok(out)
    }
    /// Reads a table entry query, returning the table entries.
    pub fn read_entries(&self, te: TableEntry) -> Vec<TableEntry> {
        self.read(E::TableEntry(te))
            .expect("read")
            .into_iter()
            .map(|e| match e {
                E::TableEntry(t) => t,
                other => panic!("not a table entry: {other:?}"),
            })
            .collect()
    }
    /// Every entry of a table.
    pub fn entries(&self, table: &str) -> Vec<TableEntry> {
        self.read_entries(TableEntry {
            table_id: self.table(table),
            ..Default::default()
        })
    }
}

pub fn update(ty: Type, e: E) -> Update {
    Update {
        r#type: ty as i32,
        entity: Some(Entity { entity: Some(e) }),
    }
}

pub fn fm(id: u32, m: F) -> FieldMatch {
    FieldMatch {
        field_id: id,
        field_match_type: Some(m),
    }
}
pub fn exact(id: u32, v: &[u8]) -> FieldMatch {
    fm(id, F::Exact(p4::field_match::Exact { value: v.to_vec() }))
}
pub fn lpm(id: u32, v: &[u8], len: i32) -> FieldMatch {
    fm(
        id,
        F::Lpm(p4::field_match::Lpm {
            value: v.to_vec(),
            prefix_len: len,
        }),
    )
}
pub fn ternary(id: u32, v: &[u8], m: &[u8]) -> FieldMatch {
    fm(
        id,
        F::Ternary(p4::field_match::Ternary {
            value: v.to_vec(),
            mask: m.to_vec(),
        }),
    )
}
pub fn range(id: u32, lo: &[u8], hi: &[u8]) -> FieldMatch {
    fm(
        id,
        F::Range(p4::field_match::Range {
            low: lo.to_vec(),
            high: hi.to_vec(),
        }),
    )
}
pub fn optional(id: u32, v: &[u8]) -> FieldMatch {
    fm(
        id,
        F::Optional(p4::field_match::Optional { value: v.to_vec() }),
    )
}

/// An action with params (id, value) in order 1, 2, ...
pub fn action(id: u32, params: &[&[u8]]) -> p4::Action {
    p4::Action {
        action_id: id,
        params: params
            .iter()
            .enumerate()
            .map(|(i, v)| p4::action::Param {
                param_id: i as u32 + 1,
                value: v.to_vec(),
            })
            .collect(),
    }
}

pub fn direct(a: p4::Action) -> Option<p4::TableAction> {
    Some(p4::TableAction {
        r#type: Some(A::Action(a)),
    })
}
pub fn member(id: u32) -> Option<p4::TableAction> {
    Some(p4::TableAction {
        r#type: Some(A::ActionProfileMemberId(id)),
    })
}
pub fn group(id: u32) -> Option<p4::TableAction> {
    Some(p4::TableAction {
        r#type: Some(A::ActionProfileGroupId(id)),
    })
}

/// A table entry of `table` with `matches`, `action` and `priority`.
pub fn entry(
    table: u32,
    matches: Vec<FieldMatch>,
    action: Option<p4::TableAction>,
    priority: i32,
) -> TableEntry {
    TableEntry {
        table_id: table,
        r#match: matches,
        action,
        priority,
        ..Default::default()
    }
}

pub fn te(e: TableEntry) -> E {
    E::TableEntry(e)
}

/// Everything a controller or `simple_switch_CLI` can see of the state: every entity read
/// wildcard (debug-printed), every table dump, profile dumps, the multicast dump.
pub fn observe(r: &Rig) -> String {
    use koi_proto::p4runtime::{
        ActionProfileGroup, ActionProfileMember, CounterEntry, DigestEntry, DirectCounterEntry,
        DirectMeterEntry, MeterEntry, PacketReplicationEngineEntry, RegisterEntry, ValueSetEntry,
        packet_replication_engine_entry::Type as P,
    };
    let mut out = String::new();
    let mut queries = vec![
        E::TableEntry(TableEntry {
            counter_data: Some(Default::default()),
            meter_config: Some(Default::default()),
            ..Default::default()
        }),
        E::ActionProfileMember(ActionProfileMember::default()),
        E::ActionProfileGroup(ActionProfileGroup::default()),
        E::CounterEntry(CounterEntry::default()),
        E::DirectCounterEntry(DirectCounterEntry::default()),
        E::MeterEntry(MeterEntry::default()),
        E::DirectMeterEntry(DirectMeterEntry::default()),
        E::RegisterEntry(RegisterEntry::default()),
        E::ValueSetEntry(ValueSetEntry::default()),
        E::DigestEntry(DigestEntry::default()),
        E::PacketReplicationEngineEntry(PacketReplicationEngineEntry {
            r#type: Some(P::MulticastGroupEntry(Default::default())),
        }),
        E::PacketReplicationEngineEntry(PacketReplicationEngineEntry {
            r#type: Some(P::CloneSessionEntry(Default::default())),
        }),
    ];
    for t in &r.info.tables {
        queries.push(E::TableEntry(TableEntry {
            table_id: t.preamble.as_ref().unwrap().id,
            is_default_action: true,
            ..Default::default()
        }));
    }
    for q in queries {
        out.push_str(&format!("{:?}\n", r.read(q).expect("read")));
    }
    for t in r.s.tables() {
        out.push_str(&koi_state::cli_format::dump_table(&r.s, t.schema.id).unwrap());
    }
    for p in &r.info.action_profiles {
        out.push_str(
            &koi_state::cli_format::profile_dump(&r.s, &p.preamble.as_ref().unwrap().name).unwrap(),
        );
    }
    out.push_str(&koi_state::cli_format::mc_dump(&r.s));
    out
}
