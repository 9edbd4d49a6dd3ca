//! Several pipelines in one switch are several P4Runtime devices on the one server: each has
//! its own device id, arbitration, program and state; a Write to one is not seen by the
//! other. Pipelines added and removed at run time come and go as devices.

mod support;

use koi_proto::p4runtime::set_forwarding_pipeline_config_request::Action;
use koi_proto::p4runtime::{CapabilitiesRequest, update, write_request::Atomicity};
use koi_runtime::{PipelineConfig, PipelineSetup, Switch, SwitchConfig};
use std::sync::Arc;
use support::*;
use tonic::Code;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_pipeline_is_a_device_of_its_own() {
    let setup = |name: &str, device_id| PipelineSetup {
        config: PipelineConfig {
            name: name.into(),
            device_id,
            cpu_port: None,
        },
        program: None,
        init: None,
    };
    let sw = Switch::start(SwitchConfig {
        pipelines: vec![setup("a", DEVICE), setup("b", DEVICE + 1)],
        ports: vec![],
        patches: vec![],
        threads: 1,
        cache: Some(Default::default()),
    })
    .unwrap();
    let rig = Rig::serve(Arc::clone(&sw));
    let mut c = rig.client().await;
    for d in [DEVICE, DEVICE + 1] {
        c.capabilities(CapabilitiesRequest { device_id: d })
            .await
            .unwrap();
    }
    // Device a gets a program and an entry; device b has neither.
    let _primary = primary(&mut c, 1).await;
    let prog = program("l2_learning.p4");
    let info = p4info(&prog);
    c.set_forwarding_pipeline_config(set_config(&prog, Action::VerifyAndCommit, 1))
        .await
        .unwrap();
    c.write(write(
        vec![upd(
            update::Type::Insert,
            dmac(&info, [2, 0, 0, 0, 0, 1], 1),
        )],
        1,
        Atomicity::ContinueOnError,
    ))
    .await
    .unwrap();
    assert_eq!(
        read_table(&mut c, id(&info, "dmac")).await.unwrap().len(),
        1
    );
    assert!(sw.pipeline(Some("a")).unwrap().image().is_some());
    assert!(sw.pipeline(Some("b")).unwrap().image().is_none());
    // Device b: its own arbitration (the election id 1 of device a is free there), no
    // program yet.
    let mut sb = Stream::open(&mut c).await;
    sb.arbitrate(DEVICE + 1, Some(1)).await;
    assert_eq!(sb.arbitration_code().await, Code::Ok as i32);
    let mut wb = write(
        vec![upd(
            update::Type::Insert,
            dmac(&info, [2, 0, 0, 0, 0, 1], 1),
        )],
        1,
        Atomicity::ContinueOnError,
    );
    wb.device_id = DEVICE + 1;
    let e = c.write(wb.clone()).await.unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    // Loaded there too, its table starts empty: the two states are apart.
    let mut cfg = set_config(&prog, Action::VerifyAndCommit, 1);
    cfg.device_id = DEVICE + 1;
    c.set_forwarding_pipeline_config(cfg).await.unwrap();
    let out = sw.command(Some("b"), "table_num_entries dmac").unwrap();
    assert_eq!(out.trim(), "0", "{out}");
    c.write(wb).await.unwrap();
    let out = sw.command(Some("b"), "table_num_entries dmac").unwrap();
    assert_eq!(out.trim(), "1", "{out}");
    // A pipeline added while the server runs is a device at once; removed, it is gone.
    sw.command(None, "pipeline_add c --device-id 20").unwrap();
    c.capabilities(CapabilitiesRequest { device_id: 20 })
        .await
        .unwrap();
    let mut sc = Stream::open(&mut c).await;
    sc.arbitrate(20, Some(5)).await;
    assert_eq!(sc.arbitration_code().await, Code::Ok as i32);
    sw.command(None, "pipeline_remove c").unwrap();
    let e = c
        .capabilities(CapabilitiesRequest { device_id: 20 })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    drop(rig);
}
