//! The L2L3-ACL example's control plane: its six tables built by hand (keys and actions as
//! `examples/l2l3_acl.p4` declares them), and `examples/l2l3_acl.entries` executed against
//! the state through the simple_switch_CLI executor.

use koi_control::command;
use koi_ir::*;
use koi_state::{State, cli};

fn slot(p: &mut Pipeline, name: &str, w: u32) -> Expr {
    Expr::Slot(p.phv.add_slot(name, Ty::Bits(w), SlotKind::Metadata))
}

fn action(p: &mut Pipeline, name: &str, params: &[(&str, u32)]) -> ActionId {
    let ps = params
        .iter()
        .map(|(n, w)| ActionParam::bits(n, *w))
        .collect();
    p.actions.push(Action::new(name, ps, vec![]))
}

fn table(
    p: &mut Pipeline,
    name: &str,
    keys: Vec<(Expr, &str, u32, MatchKind)>,
    acts: &[ActionId],
    default: ActionId,
) {
    let mut t = Table::new(name, default);
    t.keys = keys
        .into_iter()
        .map(|(expr, n, w, k)| TableKey {
            expr,
            field: MatchField::new(n, w, k),
        })
        .collect();
    t.actions = acts.iter().map(|a| TableAction::new(*a)).collect();
    t.default_action.is_const = true;
    p.tables.push(t);
}

fn l2l3() -> Pipeline {
    let mut p = Pipeline::new(Architecture::V1Model);
    let port = slot(&mut p, "std.ingress_port", 9);
    let eport = slot(&mut p, "std.egress_port", 9);
    let vvalid = slot(&mut p, "vlan_valid", 1);
    let vid = slot(&mut p, "hdr.vlan.vid", 12);
    let dst = slot(&mut p, "hdr.eth.dst", 48);
    let src = slot(&mut p, "hdr.eth.src", 48);
    let ip_dst = slot(&mut p, "hdr.ipv4.dst", 32);
    let ip_src = slot(&mut p, "hdr.ipv4.src", 32);
    let proto = slot(&mut p, "hdr.ipv4.protocol", 8);
    let sport = slot(&mut p, "meta.l4_sport", 16);
    let dport = slot(&mut p, "meta.l4_dport", 16);
    let drop = action(&mut p, "IngressImpl.drop", &[]);
    let push = action(&mut p, "IngressImpl.push_vlan", &[("vid", 12)]);
    let tagged = action(&mut p, "IngressImpl.tagged", &[]);
    let to_router = action(&mut p, "IngressImpl.to_router", &[]);
    let switch_to = action(&mut p, "IngressImpl.switch_to", &[("port", 9)]);
    let ok = action(&mut p, "IngressImpl.routable_ok", &[]);
    let nh = action(
        &mut p,
        "IngressImpl.set_nexthop",
        &[("router_mac", 48), ("nexthop_mac", 48), ("port", 9)],
    );
    let allow = action(&mut p, "IngressImpl.allow", &[]);
    let pop = action(&mut p, "EgressImpl.pop_vlan", &[]);
    let edrop = action(&mut p, "EgressImpl.drop", &[]);
    use MatchKind::*;
    let vkeys = vec![
        (port, "std.ingress_port", 9, Exact),
        (vvalid, "hdr.vlan.$valid$", 1, Exact),
        (vid.clone(), "hdr.vlan.vid", 12, Ternary),
    ];
    table(
        &mut p,
        "IngressImpl.vlan_ingress",
        vkeys,
        &[push, tagged, drop],
        drop,
    );
    let skeys = vec![
        (dst.clone(), "hdr.eth.dst", 48, Exact),
        (vid.clone(), "hdr.vlan.vid", 12, Exact),
    ];
    table(
        &mut p,
        "IngressImpl.switching",
        skeys,
        &[to_router, switch_to, drop],
        drop,
    );
    let rkeys = vec![
        (src, "hdr.eth.src", 48, Exact),
        (dst, "hdr.eth.dst", 48, Exact),
        (vid.clone(), "hdr.vlan.vid", 12, Exact),
    ];
    table(&mut p, "IngressImpl.routable", rkeys, &[ok, drop], drop);
    table(
        &mut p,
        "IngressImpl.routing",
        vec![(ip_dst.clone(), "hdr.ipv4.dst", 32, Lpm)],
        &[nh, drop],
        drop,
    );
    let akeys = vec![
        (proto, "hdr.ipv4.protocol", 8, Ternary),
        (ip_src, "hdr.ipv4.src", 32, Ternary),
        (ip_dst, "hdr.ipv4.dst", 32, Ternary),
        (sport, "meta.l4_sport", 16, Ternary),
        (dport, "meta.l4_dport", 16, Ternary),
    ];
    table(&mut p, "IngressImpl.acl", akeys, &[drop, allow], allow);
    let ekeys = vec![
        (eport, "std.egress_port", 9, Exact),
        (vid, "hdr.vlan.vid", 12, Exact),
    ];
    table(
        &mut p,
        "EgressImpl.vlan_egress",
        ekeys,
        &[pop, edrop],
        edrop,
    );
    p
}

#[test]
fn l2l3_acl_entries_file_runs_against_the_state() {
    let p = l2l3();
    let mut s = State::new(&p).unwrap();
    let text = include_str!("../../../examples/l2l3_acl.entries");
    let mut handles = Vec::new();
    for line in text.lines() {
        let Some(c) = command::parse(line).unwrap() else {
            continue;
        };
        let out = cli::execute(&mut s, &c).unwrap_or_else(|e| panic!("{line}: {e}"));
        handles.push(out);
    }
    assert_eq!(handles.len(), 53);
    assert!(
        handles[0].ends_with("Entry has been added with handle 0"),
        "{}",
        handles[0]
    );
    assert!(handles[3].ends_with("handle 3"));
    assert_eq!(s.table("vlan_ingress").unwrap().len(), 4);
    assert_eq!(s.table("switching").unwrap().len(), 9);
    assert_eq!(s.table("routable").unwrap().len(), 4);
    assert_eq!(s.table("routing").unwrap().len(), 16);
    assert_eq!(s.table("acl").unwrap().len(), 16);
    assert_eq!(s.table("vlan_egress").unwrap().len(), 4);
    // The trailing "10" of `push_vlan 1 0 0&&&0 => 100 10` is the priority, the 100 the vid.
    let e = s.table_entry("vlan_ingress", 0).unwrap();
    assert_eq!(e.priority, Some(cli::cli_priority_to_state(10)));
    match &e.action {
        koi_state::EntryAction::Action(c) => assert_eq!(c.args, [Bits::from_u64(12, 100)]),
        other => panic!("unexpected {other:?}"),
    }
    // Adding the same entries again is refused entry by entry, and changes nothing.
    let first = command::parse(text.lines().find(|l| l.starts_with("table_add")).unwrap())
        .unwrap()
        .unwrap();
    assert!(cli::execute(&mut s, &first).is_err());
    assert_eq!(s.table("vlan_ingress").unwrap().len(), 4);
}
