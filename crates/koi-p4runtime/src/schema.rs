//! What the codec knows of one program's P4Info, resolved against its koi-state once, when
//! the [`crate::Target`] is built: for every P4Info id the koi-state object it designates
//! (tables with their match fields, actions with their parameters, action profiles, counters,
//! meters, registers, value sets, digests, controller headers), with widths and translations.
//!
//! P4Info names are koi-state's full names, so objects are matched by name; widths must agree
//! (for a translated type, P4Info gives the controller's width and koi-state the data plane's).
//! An action's name is its control-plane name: the specialisations of one source action (its
//! directional parameters bound differently per table) are one P4Info action, resolved per
//! table by name when written and mapped back to its one id when read.

use crate::error::{Result, invalid, not_found};
use crate::translate::{Codec, Sdn};
use koi_ir::entity::EntityId;
use koi_ir::{ActionId, ExternId, MatchKind, TableId, ValueSetId};
use koi_proto::p4info::{
    self, P4DataTypeSpec, P4Info, P4NamedType, P4TypeInfo, action_ref, match_field,
    p4_new_type_spec::Representation, p4_new_type_translation::SdnType,
};
use koi_state::{ExternState, State};
use std::collections::HashMap;

/// A match field of a table or value set.
#[derive(Clone, Debug)]
pub struct FieldInfo {
    pub id: u32,
    pub name: String,
    pub kind: MatchKind,
    pub codec: Codec,
}

/// A table.
#[derive(Clone, Debug)]
pub struct TableInfo {
    pub id: u32,
    pub name: String,
    pub table: TableId,
    /// In key order (koi-state's order).
    pub fields: Vec<FieldInfo>,
    /// The table's actions (P4Info ids) and their scopes.
    pub actions: HashMap<u32, action_ref::Scope>,
    /// The action profile or selector (P4Info id).
    pub profile: Option<u32>,
    pub direct_counter: Option<u32>,
    pub direct_meter: Option<u32>,
    pub support_timeout: bool,
    /// `const entries`.
    pub is_const: bool,
    pub const_default: bool,
    pub needs_priority: bool,
}

/// An action parameter.
#[derive(Clone, Debug)]
pub struct ParamInfo {
    pub id: u32,
    pub name: String,
    pub codec: Codec,
}

/// An action: a control-plane name, which designates in each table the table's action of
/// that name (the specialisations of one source action share it; see
/// [`Schema::action_of`]).
#[derive(Clone, Debug)]
pub struct ActionInfo {
    pub name: String,
    pub params: Vec<ParamInfo>,
}

/// An action profile or selector.
#[derive(Clone, Debug)]
pub struct ProfileInfo {
    pub id: u32,
    pub name: String,
    pub ext: ExternId,
    pub with_selector: bool,
    pub size: u64,
    pub max_group_size: i32,
    pub weights_disallowed: bool,
    /// The actions of its tables (P4Info ids), with the scope that lets members run them
    /// (`DEFAULT_ONLY` only if no table takes the action in entries).
    pub actions: HashMap<u32, action_ref::Scope>,
}

/// An indexed counter, meter or register, or a direct counter or meter (attached to the
/// tables whose `direct_resource_ids` list it).
#[derive(Clone, Debug)]
pub struct ExternInfo {
    pub id: u32,
    pub name: String,
    pub ext: ExternId,
    /// Cells of an indexed one.
    pub size: u64,
    /// A meter's type (`MeterSpec.Type`).
    pub meter_type: i32,
    /// A register's cell type.
    pub spec: Option<P4DataTypeSpec>,
}

/// A parser value set.
#[derive(Clone, Debug)]
pub struct ValueSetInfo {
    pub id: u32,
    pub name: String,
    pub vs: ValueSetId,
    pub fields: Vec<FieldInfo>,
    pub size: u32,
}

/// A digest.
#[derive(Clone, Debug)]
pub struct DigestInfo {
    pub id: u32,
    pub name: String,
    pub spec: Option<P4DataTypeSpec>,
}

/// A field of a controller header.
#[derive(Clone, Debug)]
pub struct MetaField {
    pub id: u32,
    pub name: String,
    pub codec: Codec,
}

/// Objects by P4Info id, and the P4Info order for wildcard reads.
#[derive(Clone, Debug)]
pub struct Objects<T> {
    pub by_id: HashMap<u32, T>,
    pub order: Vec<u32>,
}

impl<T> Default for Objects<T> {
    fn default() -> Self {
        Objects {
            by_id: HashMap::new(),
            order: Vec::new(),
        }
    }
}

impl<T> Objects<T> {
    fn add(&mut self, id: u32, v: T) -> Result<()> {
        if self.by_id.insert(id, v).is_some() {
            return Err(invalid(format!("P4Info id {id:#x} is used twice")));
        }
        self.order.push(id);
        Ok(())
    }

    pub fn get(&self, id: u32) -> Option<&T> {
        self.by_id.get(&id)
    }

    /// Every object in P4Info order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.order.iter().filter_map(|id| self.by_id.get(id))
    }

    /// The objects a read of `id` selects: all for 0, else that one (`NOT_FOUND` if P4Info
    /// has no such `kind`).
    pub fn select(&self, id: u32, kind: &str) -> Result<Vec<&T>> {
        if id == 0 {
            return Ok(self.iter().collect());
        }
        self.get(id)
            .map(|x| vec![x])
            .ok_or_else(|| not_found(format!("no {kind} with id {id} in the P4Info")))
    }
}

/// Everything the codec resolved of a program's P4Info.
#[derive(Clone, Debug, Default)]
pub struct Schema {
    pub tables: Objects<TableInfo>,
    pub table_of: HashMap<TableId, u32>,
    pub actions: Objects<ActionInfo>,
    /// The P4Info action of every IR action P4Info lists (several for specialisations).
    pub action_of: HashMap<ActionId, u32>,
    pub profiles: Objects<ProfileInfo>,
    pub profile_of: HashMap<ExternId, u32>,
    pub counters: Objects<ExternInfo>,
    pub direct_counters: Objects<ExternInfo>,
    pub meters: Objects<ExternInfo>,
    pub direct_meters: Objects<ExternInfo>,
    pub registers: Objects<ExternInfo>,
    pub value_sets: Objects<ValueSetInfo>,
    pub digests: Objects<DigestInfo>,
    pub digest_by_name: HashMap<String, u32>,
    pub packet_in: Option<Vec<MetaField>>,
    pub packet_out: Option<Vec<MetaField>>,
    pub types: P4TypeInfo,
    /// The P4 width of each user `type` of `types` (P4Info gives a translated one's
    /// controller width only).
    pub type_widths: HashMap<String, u32>,
}

fn name_of(p: &Option<p4info::Preamble>) -> (u32, String) {
    p.as_ref()
        .map_or((0, String::new()), |p| (p.id, p.name.clone()))
}

/// How a value of a P4Info field with `type_name` and controller width `bitwidth` is
/// represented; `p4_width` is its data-plane width when known.
pub fn codec(
    types: &P4TypeInfo,
    state: &State,
    type_name: Option<&P4NamedType>,
    bitwidth: i32,
    p4_width: Option<u32>,
) -> Codec {
    let translated = type_name.and_then(|n| {
        let t = types.new_types.get(&n.name)?;
        match &t.representation {
            Some(Representation::TranslatedType(tr)) => Some((n.name.clone(), tr.sdn_type)),
            _ => None,
        }
    });
    let sdn_width = u32::try_from(bitwidth).unwrap_or(0);
    match translated {
        Some((name, sdn)) => {
            let width = p4_width
                .or_else(|| state.type_width(&name))
                .unwrap_or(sdn_width);
            let sdn = match sdn {
                Some(SdnType::SdnString(_)) => Sdn::Str(name),
                Some(SdnType::SdnBitwidth(w)) => Sdn::Bits(u32::try_from(w).unwrap_or(0)),
                None => Sdn::Plain,
            };
            Codec { width, sdn }
        }
        None => Codec::plain(p4_width.unwrap_or(sdn_width)),
    }
}

/// The koi match kind of a P4Info match field.
fn match_kind(m: &p4info::MatchField) -> MatchKind {
    match &m.r#match {
        Some(match_field::Match::MatchType(t)) => {
            match match_field::MatchType::try_from(*t)
                .unwrap_or(match_field::MatchType::Unspecified)
            {
                match_field::MatchType::Exact => MatchKind::Exact,
                match_field::MatchType::Lpm => MatchKind::Lpm,
                match_field::MatchType::Ternary => MatchKind::Ternary,
                match_field::MatchType::Range => MatchKind::Range,
                match_field::MatchType::Optional => MatchKind::Optional,
                match_field::MatchType::Unspecified => MatchKind::Other(String::new()),
            }
        }
        Some(match_field::Match::OtherMatchType(n)) => MatchKind::Other(n.clone()),
        None => MatchKind::Other(String::new()),
    }
}

fn extern_of(state: &State, name: &str, what: &str) -> Result<ExternId> {
    let e = state
        .extern_id(name)
        .map_err(|_| invalid(format!("P4Info {what} {name} is not in the program")))?;
    if state.extern_name(e) != Some(name) {
        return Err(invalid(format!(
            "P4Info {what} {name} is not in the program"
        )));
    }
    Ok(e)
}

impl Schema {
    /// Resolves `info` against `state`; refuses a P4Info that does not describe the program
    /// the state was built from.
    pub fn build(info: &P4Info, state: &State) -> Result<Schema> {
        let types = info.type_info.clone().unwrap_or_default();
        let type_widths = types
            .new_types
            .keys()
            .filter_map(|n| Some((n.clone(), state.type_width(n)?)))
            .collect();
        let mut s = Schema {
            types,
            type_widths,
            ..Schema::default()
        };
        s.actions_of(info, state)?;
        s.externs_of(info, state)?;
        s.tables_of(info, state)?;
        s.profiles_of(info, state)?;
        s.value_sets_of(info, state)?;
        for d in &info.digests {
            let (id, name) = name_of(&d.preamble);
            s.digest_by_name.insert(name.clone(), id);
            s.digests.add(
                id,
                DigestInfo {
                    id,
                    name,
                    spec: d.type_spec.clone(),
                },
            )?;
        }
        for h in &info.controller_packet_metadata {
            let (_, name) = name_of(&h.preamble);
            let fields: Vec<MetaField> = h
                .metadata
                .iter()
                .map(|m| MetaField {
                    id: m.id,
                    name: m.name.clone(),
                    codec: codec(&s.types, state, m.type_name.as_ref(), m.bitwidth, None),
                })
                .collect();
            match name.as_str() {
                "packet_in" => s.packet_in = Some(fields),
                "packet_out" => s.packet_out = Some(fields),
                _ => {}
            }
        }
        Ok(s)
    }

    fn actions_of(&mut self, info: &P4Info, state: &State) -> Result<()> {
        // The actions of each control-plane name: one, or the specialisations of one source
        // action (the table's use of the name picks its own).
        let mut by_name: HashMap<String, Vec<ActionId>> = HashMap::new();
        let mut i = 0;
        while let Some(a) = state.action_schema(ActionId::new(i)) {
            by_name
                .entry(a.name.clone())
                .or_default()
                .push(ActionId::new(i));
            i += 1;
        }
        for a in &info.actions {
            let (id, name) = name_of(&a.preamble);
            let Some(&action) = by_name.get(&name).and_then(|v| v.first()) else {
                return Err(invalid(format!(
                    "P4Info action {name} is not in the program"
                )));
            };
            let mut widths: Vec<u32> = state
                .action_schema(action)
                .map(|x| x.params.iter().map(|(_, w)| *w).collect())
                .unwrap_or_default();
            // An action no table uses (one the program only calls) is listed without its
            // parameters, as p4c lists it: no entry can name it, so it has none to encode.
            let in_a_table = info
                .tables
                .iter()
                .any(|t| t.action_refs.iter().any(|r| r.id == id));
            if a.params.is_empty() && !in_a_table {
                widths.clear();
            }
            if widths.len() != a.params.len() {
                return Err(invalid(format!(
                    "P4Info action {name} has {} parameters, the program's {}",
                    a.params.len(),
                    widths.len()
                )));
            }
            let params = a
                .params
                .iter()
                .zip(widths)
                .map(|(p, w)| ParamInfo {
                    id: p.id,
                    name: p.name.clone(),
                    codec: codec(
                        &self.types,
                        state,
                        p.type_name.as_ref(),
                        p.bitwidth,
                        Some(w),
                    ),
                })
                .collect();
            for x in &by_name[&name] {
                self.action_of.insert(*x, id);
            }
            self.actions.add(id, ActionInfo { name, params })?;
        }
        Ok(())
    }

    fn tables_of(&mut self, info: &P4Info, state: &State) -> Result<()> {
        for t in &info.tables {
            let (id, name) = name_of(&t.preamble);
            let missing = || invalid(format!("P4Info table {name} is not in the program"));
            let tid = state.table_id(&name).map_err(|_| missing())?;
            let ts = state.table_by_id(tid).ok_or_else(missing)?;
            if ts.name() != name {
                return Err(missing());
            }
            if ts.schema.keys.len() != t.match_fields.len() {
                return Err(invalid(format!(
                    "P4Info table {name} has {} match fields, the program's {}",
                    t.match_fields.len(),
                    ts.schema.keys.len()
                )));
            }
            let fields = t
                .match_fields
                .iter()
                .zip(&ts.schema.keys)
                .map(|(m, k)| FieldInfo {
                    id: m.id,
                    name: m.name.clone(),
                    kind: match_kind(m),
                    codec: codec(
                        &self.types,
                        state,
                        m.type_name.as_ref(),
                        m.bitwidth,
                        Some(k.width),
                    ),
                })
                .collect();
            let actions = t
                .action_refs
                .iter()
                .map(|r| {
                    let scope = action_ref::Scope::try_from(r.scope)
                        .unwrap_or(action_ref::Scope::TableAndDefault);
                    (r.id, scope)
                })
                .collect();
            let direct = |list: &Objects<ExternInfo>| {
                t.direct_resource_ids
                    .iter()
                    .copied()
                    .find(|d| list.by_id.contains_key(d))
            };
            self.table_of.insert(tid, id);
            self.tables.add(
                id,
                TableInfo {
                    id,
                    name,
                    table: tid,
                    fields,
                    actions,
                    profile: (t.implementation_id != 0).then_some(t.implementation_id),
                    direct_counter: direct(&self.direct_counters),
                    direct_meter: direct(&self.direct_meters),
                    support_timeout: t.idle_timeout_behavior
                        == p4info::table::IdleTimeoutBehavior::NotifyControl as i32,
                    is_const: t.is_const_table || ts.schema.entries_const,
                    const_default: t.const_default_action_id != 0,
                    needs_priority: ts.lookup_kind().needs_priority(),
                },
            )?;
        }
        Ok(())
    }

    fn profiles_of(&mut self, info: &P4Info, state: &State) -> Result<()> {
        for p in &info.action_profiles {
            let (id, name) = name_of(&p.preamble);
            let ext = extern_of(state, &name, "action profile")?;
            if state.profile_by_id(ext).is_none() {
                return Err(invalid(format!("{name} is not an action profile")));
            }
            let mut actions: HashMap<u32, action_ref::Scope> = HashMap::new();
            let tables = p.table_ids.iter().filter_map(|t| self.tables.get(*t));
            for (a, scope) in tables.flat_map(|t| t.actions.iter()) {
                let entry_scope = match scope {
                    action_ref::Scope::DefaultOnly => action_ref::Scope::DefaultOnly,
                    _ => action_ref::Scope::TableAndDefault,
                };
                let e = actions.entry(*a).or_insert(entry_scope);
                if entry_scope != action_ref::Scope::DefaultOnly {
                    *e = entry_scope;
                }
            }
            self.profile_of.insert(ext, id);
            self.profiles.add(
                id,
                ProfileInfo {
                    id,
                    name,
                    ext,
                    with_selector: p.with_selector,
                    size: u64::try_from(p.size).unwrap_or(0),
                    max_group_size: p.max_group_size,
                    weights_disallowed: p.weights_disallowed,
                    actions,
                },
            )?;
        }
        Ok(())
    }

    fn externs_of(&mut self, info: &P4Info, state: &State) -> Result<()> {
        let base = |id: u32, name: String, ext: ExternId| ExternInfo {
            id,
            name,
            ext,
            size: 0,
            meter_type: 0,
            spec: None,
        };
        for c in &info.counters {
            let (id, name) = name_of(&c.preamble);
            let ext = extern_of(state, &name, "counter")?;
            let size = match state.extern_state(ext) {
                Some(ExternState::Counter(a)) => a.len(),
                _ => return Err(invalid(format!("{name} is not an indexed counter"))),
            };
            self.counters.add(
                id,
                ExternInfo {
                    size,
                    ..base(id, name, ext)
                },
            )?;
        }
        for m in &info.meters {
            let (id, name) = name_of(&m.preamble);
            let ext = extern_of(state, &name, "meter")?;
            let size = match state.extern_state(ext) {
                Some(ExternState::Meter(a)) => a.cells.len(),
                _ => return Err(invalid(format!("{name} is not an indexed meter"))),
            };
            let meter_type = m.spec.as_ref().map_or(0, |s| s.r#type);
            let e = ExternInfo {
                size,
                meter_type,
                ..base(id, name, ext)
            };
            self.meters.add(id, e)?;
        }
        for c in &info.direct_counters {
            let (id, name) = name_of(&c.preamble);
            let ext = extern_of(state, &name, "direct counter")?;
            self.direct_counters.add(id, base(id, name, ext))?;
        }
        for m in &info.direct_meters {
            let (id, name) = name_of(&m.preamble);
            let ext = extern_of(state, &name, "direct meter")?;
            let e = ExternInfo {
                meter_type: m.spec.as_ref().map_or(0, |s| s.r#type),
                ..base(id, name, ext)
            };
            self.direct_meters.add(id, e)?;
        }
        for r in &info.registers {
            let (id, name) = name_of(&r.preamble);
            let ext = extern_of(state, &name, "register")?;
            let size = state
                .register(ext)
                .map(|a| a.len())
                .ok_or_else(|| invalid(format!("{name} is not a register")))?;
            let e = ExternInfo {
                size,
                spec: r.type_spec.clone(),
                ..base(id, name, ext)
            };
            self.registers.add(id, e)?;
        }
        Ok(())
    }

    fn value_sets_of(&mut self, info: &P4Info, state: &State) -> Result<()> {
        for v in &info.value_sets {
            let (id, name) = name_of(&v.preamble);
            let missing = || invalid(format!("P4Info value set {name} is not in the program"));
            let vs = state.value_set_id(&name).map_err(|_| missing())?;
            let widths: Vec<u32> = state
                .value_set_fields(vs)
                .ok_or_else(missing)?
                .iter()
                .map(|(_, w, _)| *w)
                .collect();
            if widths.len() != v.r#match.len() {
                return Err(missing());
            }
            let fields = v
                .r#match
                .iter()
                .zip(widths)
                .map(|(m, w)| FieldInfo {
                    id: m.id,
                    name: m.name.clone(),
                    kind: match_kind(m),
                    codec: codec(
                        &self.types,
                        state,
                        m.type_name.as_ref(),
                        m.bitwidth,
                        Some(w),
                    ),
                })
                .collect();
            let e = ValueSetInfo {
                id,
                name,
                vs,
                fields,
                size: u32::try_from(v.size).unwrap_or(0),
            };
            self.value_sets.add(id, e)?;
        }
        Ok(())
    }
}
