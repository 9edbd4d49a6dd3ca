//! The `p4.v1.P4Runtime` gRPC service: finds the device a request names and hands the request
//! to [`crate::rw`], [`crate::config`] or, for `StreamChannel`, to the stream's task below.
//!
//! **StreamChannel.** Each stream gets an id and an outgoing queue. Its first message must be
//! a `MasterArbitrationUpdate` naming a device (NOT_FOUND otherwise, which ends the stream, as
//! every arbitration refusal does). Then: further arbitration updates; `PacketOut` from the
//! primary (a backup's, or one whose metadata does not fit the P4Info, is dropped and answered
//! with a `StreamError`); `DigestListAck`. When the client goes away, the device forgets the
//! stream and, if it was the primary, tells the others.

use crate::arbitration::StreamId;
use crate::device::{Device, StreamTx, lock};
use crate::status::status;
use crate::{Devices, config, rw};
use koi_p4runtime as codec;
use koi_proto::p4runtime::p4_runtime_server::P4Runtime;
use koi_proto::p4runtime::{
    CapabilitiesRequest, CapabilitiesResponse, GetForwardingPipelineConfigRequest,
    GetForwardingPipelineConfigResponse, PacketOut, PacketOutError, ReadRequest, ReadResponse,
    SetForwardingPipelineConfigRequest, SetForwardingPipelineConfigResponse, StreamError,
    StreamMessageRequest, StreamMessageResponse, WriteRequest, WriteResponse,
    stream_error::Details, stream_message_request::Update as In,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Request, Response, Status, Streaming};

/// The P4Runtime version koi implements.
pub const API_VERSION: &str = "1.5.0";
/// Messages waiting to be sent on one stream; beyond it packet-ins and digests are dropped.
pub const STREAM_QUEUE: usize = 1024;
/// Entities per `ReadResponse`.
const READ_CHUNK: usize = 1000;

/// The service over the switch's devices.
pub struct Service {
    pub(crate) devices: Arc<Devices>,
    next_stream: AtomicU64,
}

impl Service {
    pub(crate) fn new(devices: Arc<Devices>) -> Service {
        Service {
            devices,
            next_stream: AtomicU64::new(1),
        }
    }

    fn device(&self, id: u64) -> Result<Arc<Device>, Status> {
        self.devices
            .get(id)
            .ok_or_else(|| status(Code::NotFound, format!("no device {id}")))
    }
}

type Result2<T> = Result<Response<T>, Status>;

#[tonic::async_trait]
impl P4Runtime for Service {
    async fn write(&self, request: Request<WriteRequest>) -> Result2<WriteResponse> {
        let req = request.into_inner();
        let d = self.device(req.device_id)?;
        rw::write(&d, &req)?;
        Ok(Response::new(WriteResponse {}))
    }

    type ReadStream = tokio_stream::Iter<std::vec::IntoIter<Result<ReadResponse, Status>>>;

    async fn read(&self, request: Request<ReadRequest>) -> Result2<Self::ReadStream> {
        let req = request.into_inner();
        let d = self.device(req.device_id)?;
        let (found, err) = rw::read(&d, &req);
        if found.is_empty()
            && let Some(e) = err
        {
            return Err(e);
        }
        let mut out: Vec<Result<ReadResponse, Status>> = Vec::new();
        let mut found = found.into_iter().peekable();
        while found.peek().is_some() {
            let entities: Vec<_> = found.by_ref().take(READ_CHUNK).collect();
            out.push(Ok(ReadResponse { entities }));
        }
        if out.is_empty() {
            out.push(Ok(ReadResponse::default()));
        }
        out.extend(err.map(Err));
        Ok(Response::new(tokio_stream::iter(out)))
    }

    async fn set_forwarding_pipeline_config(
        &self,
        request: Request<SetForwardingPipelineConfigRequest>,
    ) -> Result2<SetForwardingPipelineConfigResponse> {
        let req = request.into_inner();
        let d = self.device(req.device_id)?;
        let done = tokio::task::spawn_blocking(move || {
            let _writes = lock(&d.writes);
            d.check_primary(&req.role, crate::arbitration::election_id(&req.election_id))?;
            config::set(&d, &req)
        })
        .await
        .map_err(|e| status(Code::Internal, format!("the pipeline change failed: {e}")))?;
        done.map(|()| Response::new(SetForwardingPipelineConfigResponse {}))
    }

    async fn get_forwarding_pipeline_config(
        &self,
        request: Request<GetForwardingPipelineConfigRequest>,
    ) -> Result2<GetForwardingPipelineConfigResponse> {
        let req = request.into_inner();
        let d = self.device(req.device_id)?;
        Ok(Response::new(config::get(&d, &req)))
    }

    type StreamChannelStream = ReceiverStream<Result<StreamMessageResponse, Status>>;

    async fn stream_channel(
        &self,
        request: Request<Streaming<StreamMessageRequest>>,
    ) -> Result2<Self::StreamChannelStream> {
        let inbound = request.into_inner();
        let (tx, rx) = mpsc::channel(STREAM_QUEUE);
        let id = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let devices = Arc::clone(&self.devices);
        tokio::spawn(serve_stream(devices, id, inbound, tx));
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn capabilities(
        &self,
        request: Request<CapabilitiesRequest>,
    ) -> Result2<CapabilitiesResponse> {
        let req = request.into_inner();
        if req.device_id != 0 {
            self.device(req.device_id)?;
        }
        Ok(Response::new(CapabilitiesResponse {
            p4runtime_api_version: API_VERSION.into(),
            ..Default::default()
        }))
    }
}

/// A stream error about a `PacketOut`.
fn packet_out_error(code: Code, message: String, p: PacketOut) -> StreamError {
    StreamError {
        canonical_code: code as i32,
        message,
        space: "koi".into(),
        code: 0,
        details: Some(Details::PacketOut(PacketOutError {
            packet_out: Some(p),
        })),
    }
}

/// Serves one `StreamChannel` until the client ends it or an arbitration refusal does.
async fn serve_stream(
    devices: Arc<Devices>,
    id: StreamId,
    mut inbound: Streaming<StreamMessageRequest>,
    tx: StreamTx,
) {
    let mut device: Option<Arc<Device>> = None;
    let mut stop = devices.stop.clone();
    loop {
        let msg = tokio::select! {
            m = inbound.next() => m,
            _ = stop.changed() => None,
        };
        let Some(Ok(msg)) = msg else {
            break;
        };
        match msg.update {
            Some(In::Arbitration(a)) => {
                let d = match &device {
                    Some(d) => Arc::clone(d),
                    None => match devices.get(a.device_id) {
                        Some(d) => d,
                        None => {
                            let _ = tx
                                .send(Err(status(
                                    Code::NotFound,
                                    format!("no device {}", a.device_id),
                                )))
                                .await;
                            break;
                        }
                    },
                };
                let done = d.arbitrate(id, &a, &tx);
                if let Err(r) = done {
                    let _ = tx.send(Err(status(r.code, r.message))).await;
                    break;
                }
                device = Some(d);
            }
            Some(In::Packet(p)) => {
                let Some(d) = device.as_ref() else {
                    Device::stream_error(
                        &tx,
                        packet_out_error(
                            Code::FailedPrecondition,
                            "send a MasterArbitrationUpdate before packets".into(),
                            p,
                        ),
                    );
                    continue;
                };
                if !d.is_primary(id) {
                    Device::stream_error(
                        &tx,
                        packet_out_error(
                            Code::PermissionDenied,
                            "only the primary controller may send packets".into(),
                            p,
                        ),
                    );
                    continue;
                }
                if let Err(e) = packet_out(d, &p) {
                    Device::stream_error(&tx, packet_out_error(e.0, e.1, p));
                }
            }
            Some(In::DigestAck(ack)) => {
                if let Some(d) = &device {
                    d.digest_ack(ack.digest_id, ack.list_id);
                }
            }
            Some(In::Other(_)) => Device::stream_error(
                &tx,
                StreamError {
                    canonical_code: Code::Unimplemented as i32,
                    message: "koi has no architecture-specific stream messages".into(),
                    space: "koi".into(),
                    ..Default::default()
                },
            ),
            None => Device::stream_error(
                &tx,
                StreamError {
                    canonical_code: Code::InvalidArgument as i32,
                    message: "an empty stream message".into(),
                    space: "koi".into(),
                    ..Default::default()
                },
            ),
        }
    }
    if let Some(d) = device {
        d.leave(id);
    }
}

/// Injects a controller's packet on the device's CPU port.
fn packet_out(d: &Device, p: &PacketOut) -> Result<(), (Code, String)> {
    let bytes = {
        let v = d.view();
        let Some(b) = &v.bound else {
            return Err((
                Code::FailedPrecondition,
                "the device has no forwarding pipeline config".into(),
            ));
        };
        codec::packet_out(&b.target, p).map_err(|e| (e.code, e.message))?
    };
    d.switch
        .packet_out(&d.pipeline, &bytes)
        .map_err(|e| (Code::FailedPrecondition, e))
}
