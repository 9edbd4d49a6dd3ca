//! Hostile and malformed requests over gRPC: bytes that are no protobuf message, messages of
//! the wrong shape, absurd ids and sizes, a stream that sends garbage, a flood of streams.
//! Each gets the status the P4Runtime spec (or gRPC, for what does not decode) names, and
//! the server, the device and its data plane go on serving the primary controller.

mod support;

use bytes::{Buf, BufMut};
use koi_proto::p4runtime::set_forwarding_pipeline_config_request::Action;
use koi_proto::p4runtime::write_request::Atomicity;
use koi_proto::p4runtime::{
    CapabilitiesRequest, Entity, ReadRequest, TableEntry, Update, WriteRequest, entity, update,
};
use std::time::Duration;
use support::*;
use tonic::Code;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

/// A codec that sends raw bytes and ignores the answer's body.
#[derive(Default)]
struct Raw;

impl Encoder for Raw {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, tonic::Status> {
        let v = src.chunk().to_vec();
        src.advance(v.len());
        Ok(Some(v))
    }
}

impl Codec for Raw {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = Raw;
    type Decoder = Raw;
    fn encoder(&mut self) -> Raw {
        Raw
    }
    fn decoder(&mut self) -> Raw {
        Raw
    }
}

/// Calls `method` of `p4.v1.P4Runtime` with `body` as the request's bytes.
async fn raw_call(url: &str, method: &str, body: Vec<u8>) -> Result<Vec<u8>, tonic::Status> {
    let ch = tonic::transport::Channel::from_shared(url.to_string())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut g = tonic::client::Grpc::new(ch);
    g.ready().await.unwrap();
    let path = format!("/p4.v1.P4Runtime/{method}").parse().unwrap();
    g.unary(tonic::Request::new(body), path, Raw)
        .await
        .map(|r| r.into_inner())
}

fn entry(table_id: u32) -> Entity {
    Entity {
        entity: Some(entity::Entity::TableEntry(TableEntry {
            table_id,
            ..Default::default()
        })),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_hostile_requests_get_their_status_and_the_switch_keeps_serving() {
    let rig = Rig::new(vec![]);
    let url = rig.url();
    let mut c = rig.client().await;
    let mut primary = primary(&mut c, 1).await;
    let prog = program("l2_learning.p4");
    let info = p4info(&prog);
    c.set_forwarding_pipeline_config(set_config(&prog, Action::VerifyAndCommit, 1))
        .await
        .unwrap();
    let dmac = info
        .tables
        .iter()
        .find(|t| t.preamble.as_ref().unwrap().name.ends_with("dmac"))
        .unwrap()
        .preamble
        .as_ref()
        .unwrap()
        .id;

    // Bytes that are no protobuf message: gRPC's INTERNAL for a message that does not
    // decode, on every RPC; unknown methods are UNIMPLEMENTED.
    let garbage: Vec<u8> = (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect();
    for m in [
        "Write",
        "Read",
        "SetForwardingPipelineConfig",
        "Capabilities",
    ] {
        let e = raw_call(&url, m, garbage.clone()).await.unwrap_err();
        assert_eq!(e.code(), Code::Internal, "{m}: {e:?}");
    }
    // A field tag with a wire type that cannot be: also a decode error.
    let e = raw_call(&url, "Write", vec![0x0f, 0xff, 0xff])
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Internal);
    let e = raw_call(&url, "NoSuchMethod", vec![]).await.unwrap_err();
    assert_eq!(e.code(), Code::Unimplemented);

    // Well-formed messages with absurd contents.
    let write = |updates: Vec<Update>, atomicity: i32| WriteRequest {
        device_id: DEVICE,
        election_id: eid(1),
        updates,
        atomicity,
        ..Default::default()
    };
    let upd = |t: i32, e: Entity| Update {
        r#type: t,
        entity: Some(e),
    };
    let insert = update::Type::Insert as i32;
    let e = c
        .write(write(vec![upd(insert, entry(dmac))], 99))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "unknown atomicity");
    let e = c
        .write(write(vec![upd(77, entry(dmac))], 0))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unknown, "a batch error: {e:?}");
    let e = c
        .write(write(vec![upd(insert, entry(u32::MAX))], 0))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unknown, "a batch error: {e:?}");
    let e = c
        .write(write(
            vec![Update {
                r#type: insert,
                entity: None,
            }],
            0,
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unknown, "a batch error: {e:?}");
    // A batch of 1,000 updates that all fail: each gets its error (a client must allow
    // metadata that large: P4Runtime spec, "gRPC Metadata Maximum Size"), nothing is written.
    let mut big = koi_proto::p4runtime::p4_runtime_client::P4RuntimeClient::new(
        tonic::transport::Channel::from_shared(url.clone())
            .unwrap()
            .http2_max_header_list_size(4 << 20)
            .connect()
            .await
            .unwrap(),
    );
    let many: Vec<Update> = (0..1000).map(|_| upd(insert, entry(dmac))).collect();
    let e = big.write(write(many, 0)).await.unwrap_err();
    assert_eq!(e.code(), Code::Unknown, "{e:?}");
    let errors = details(&e);
    assert_eq!(errors.len(), 1000);
    assert!(
        errors
            .iter()
            .all(|x| x.canonical_code == Code::InvalidArgument as i32),
        "{:?}",
        &errors[..2]
    );
    // 100,000 such updates: the errors exceed what the client takes as metadata, so it
    // reports RESOURCE_EXHAUSTED as the spec says a gRPC client does (tonic's client also
    // drops the connection, so this one has its own); the server goes on.
    let mut small = rig.client().await;
    let many: Vec<Update> = (0..100_000).map(|_| upd(insert, entry(dmac))).collect();
    let e = small.write(write(many, 0)).await.unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    let e = c
        .read(ReadRequest {
            device_id: DEVICE,
            entities: vec![entry(u32::MAX)],
            ..Default::default()
        })
        .await
        .unwrap_err();
    // Read errors as batch errors (spec "Batch Processing" of Read): UNKNOWN, one p4.Error
    // per entity.
    assert_eq!(e.code(), Code::Unknown);
    assert_eq!(details(&e)[0].canonical_code, Code::NotFound as i32);
    let e = c
        .read(ReadRequest {
            device_id: DEVICE,
            entities: vec![Entity { entity: None }],
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unknown);
    assert_eq!(details(&e)[0].canonical_code, Code::InvalidArgument as i32);

    // A stream whose first message has no update, and 200 streams that open and say
    // nothing: each is answered or left alone; none takes the primary's place.
    let bad = Stream::open(&mut c).await;
    bad.tx
        .send(koi_proto::p4runtime::StreamMessageRequest { update: None })
        .await
        .unwrap();
    let mut idle = Vec::new();
    for _ in 0..200 {
        idle.push(Stream::open(&mut c).await);
    }

    // Through all of it: the primary still writes and reads, the data plane still runs.
    c.capabilities(CapabilitiesRequest { device_id: DEVICE })
        .await
        .unwrap();
    let entries = read_table(&mut c, dmac).await.unwrap();
    assert!(entries.is_empty(), "{entries:?}");
    assert_eq!(rig.switch.pipeline(None).unwrap().name(), "default");
    let out = rig.switch.command(None, "table_dump dmac").unwrap();
    assert!(out.contains("Dumping default entry"), "{out}");
    drop(idle);
    drop(bad);
    // The primary's stream is still open and primary.
    primary.arbitrate(DEVICE, Some(1)).await;
    assert_eq!(primary.arbitration_code().await, Code::Ok as i32);
}

/// 100 TCP connections that never speak HTTP/2, one that trickles bytes that are no HTTP/2, and
/// a client that floods Reads and Capabilities on 8 streams at once: meanwhile another client's
/// Write and Read are answered (each awaited at most 30 s, a bound, not a speed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_and_flooding_clients_do_not_stop_another_clients_write_and_read() {
    use tokio::io::AsyncWriteExt;
    let rig = Rig::new(vec![]);
    let addr = rig.server.as_ref().unwrap().local_addr();
    let mut c = rig.client().await;
    let _primary = primary(&mut c, 1).await;
    let prog = program("l2_learning.p4");
    let info = p4info(&prog);
    c.set_forwarding_pipeline_config(set_config(&prog, Action::VerifyAndCommit, 1))
        .await
        .unwrap();
    let dmac_id = id(&info, "dmac");

    let mut silent = Vec::new();
    for _ in 0..100 {
        silent.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    let trickle = tokio::spawn(async move {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        for b in b"PRI * HTTP/2.0 nothing of the kind"
            .iter()
            .cycle()
            .take(300)
        {
            if s.write_all(&[*b]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut flood = Vec::new();
    for _ in 0..8 {
        let mut f = rig.client().await;
        let stop = std::sync::Arc::clone(&stop);
        flood.push(tokio::spawn(async move {
            let mut n = 0u32;
            // Bounded in count, and stops when the test is done.
            while n < 20_000 && !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = f
                    .capabilities(CapabilitiesRequest { device_id: DEVICE })
                    .await;
                let _ = read_table(&mut f, dmac_id).await;
                n += 1;
            }
            n
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;

    let patience = Duration::from_secs(30);
    for (k, port) in [(1u8, 1u16), (2, 2), (3, 3)] {
        let e = dmac(&info, [0, 0, 0, 0, 0, k], port);
        let w = write(
            vec![upd(update::Type::Insert, e)],
            1,
            Atomicity::ContinueOnError,
        );
        tokio::time::timeout(patience, c.write(w))
            .await
            .expect("a Write answered while others stall and flood")
            .unwrap();
        let entries = tokio::time::timeout(patience, read_table(&mut c, dmac_id))
            .await
            .expect("a Read answered while others stall and flood")
            .unwrap();
        assert_eq!(entries.len(), k as usize, "{entries:?}");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut flooded = 0;
    for f in flood {
        flooded += f.await.unwrap();
    }
    assert!(flooded > 0, "the flood ran");
    trickle.abort();
    drop(silent);
}

/// The server's connection limit (here 8): silent TCP connections (a flood that never speaks
/// gRPC) give their seats to newcomers, oldest first, so a controller can always connect and
/// the primary keeps being served; when every seat holds a client that has made calls, a
/// newcomer's call is refused with RESOURCE_EXHAUSTED and the reason, and once a client
/// leaves, a newcomer is served again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_cannot_lock_controllers_out() {
    use tokio::io::AsyncReadExt;
    const MAX: usize = 8;
    let rig = Rig::serve_with(
        Rig::switch(vec![], None),
        koi_p4runtime_server::ServerConfig {
            max_connections: MAX,
            ..koi_p4runtime_server::ServerConfig::new("127.0.0.1:0".parse().unwrap())
        },
    );
    let addr = rig.server.as_ref().unwrap().local_addr();
    let mut c = rig.client().await;
    let _primary = primary(&mut c, 1).await;
    let caps = |mut c: koi_proto::p4runtime::p4_runtime_client::P4RuntimeClient<_>| async move {
        let r = c
            .capabilities(CapabilitiesRequest { device_id: DEVICE })
            .await;
        (c, r)
    };

    let mut silent = Vec::new();
    for _ in 0..50 {
        silent.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    // A controller connecting now is served, and so is the primary.
    let (newcomer, r) = caps(rig.client().await).await;
    r.expect("a newcomer is served despite 50 silent connections");
    let (c, r) = caps(c).await;
    r.expect("the primary is served");
    let mut held = vec![newcomer];
    for _ in 0..MAX - 2 {
        let (k, r) = caps(rig.client().await).await;
        r.expect("a seat of a silent connection");
        held.push(k);
    }
    // Every silent connection has been closed by the server (each read sees the end).
    for (i, s) in silent.iter_mut().enumerate() {
        let mut b = [0u8; 64];
        let n = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match s.read(&mut b).await {
                    Ok(0) | Err(_) => return 0,
                    Ok(n) => {
                        // The server's HTTP/2 preface and settings, then the end.
                        let _ = n;
                    }
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("silent connection {i} is still open"));
        assert_eq!(n, 0);
    }
    // All seats hold clients that made calls: the next one is refused, saying why.
    let (_, r) = caps(rig.client().await).await;
    let e = r.expect_err("beyond the limit");
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    assert!(
        e.message().contains("too many P4Runtime connections (8"),
        "{e:?}"
    );
    // One client leaves: within a bound, a newcomer is served again.
    drop(held.pop());
    let mut served = false;
    for _ in 0..100 {
        let (_, r) = caps(rig.client().await).await;
        if r.is_ok() {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(served, "a seat freed by a client that left is taken again");
    let (_, r) = caps(c).await;
    r.expect("the primary is still served");
}
