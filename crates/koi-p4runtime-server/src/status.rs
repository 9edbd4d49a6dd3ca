//! gRPC statuses as P4Runtime reports errors: a canonical code and message, and for batches
//! (`Write`, `Read`) the code `UNKNOWN` with one `p4.v1.Error` per request in the
//! `google.rpc.Status` details (P4Runtime spec, "Error Reporting Messages").

use koi_proto::google_rpc::Status as RpcStatus;
use koi_proto::p4runtime::Error as P4Error;
use prost::Message;
use tonic::{Code, Status};

/// The `type_url` of a `p4.v1.Error` packed in an `Any`.
pub const ERROR_TYPE_URL: &str = "type.googleapis.com/p4.v1.Error";

/// A status whose `google.rpc.Status` details repeat its code and message.
pub fn status(code: Code, message: impl Into<String>) -> Status {
    let message = message.into();
    let rpc = RpcStatus {
        code: code as i32,
        message: message.clone(),
        details: Vec::new(),
    };
    Status::with_details(code, message, rpc.encode_to_vec().into())
}

/// The status of a batch in which some requests failed: `UNKNOWN`, with `errors` (one per
/// request, `OK` for those that succeeded) in the details.
pub fn batch(what: &str, errors: Vec<P4Error>) -> Status {
    let failed = errors.iter().filter(|e| e.canonical_code != 0).count();
    let first = errors
        .iter()
        .find(|e| e.canonical_code != 0)
        .map(|e| e.message.clone())
        .unwrap_or_default();
    let message = format!(
        "{what}: {failed} of {} failed; first: {first}",
        errors.len()
    );
    let rpc = RpcStatus {
        code: Code::Unknown as i32,
        message: message.clone(),
        details: errors
            .iter()
            .map(|e| prost_types::Any {
                type_url: ERROR_TYPE_URL.into(),
                value: e.encode_to_vec(),
            })
            .collect(),
    };
    Status::with_details(Code::Unknown, message, rpc.encode_to_vec().into())
}

/// The `p4.v1.Error` of a request that succeeded.
pub fn ok() -> P4Error {
    P4Error::default()
}

/// A `p4.v1.Error` with a code and message.
pub fn error(code: Code, message: impl Into<String>) -> P4Error {
    P4Error {
        canonical_code: code as i32,
        message: message.into(),
        space: "koi".into(),
        code: 0,
        details: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_status_carries_one_error_per_request() {
        let s = batch(
            "write",
            vec![ok(), error(Code::NotFound, "no such entry"), ok()],
        );
        assert_eq!(s.code(), Code::Unknown);
        assert!(s.message().contains("1 of 3 failed"), "{}", s.message());
        let rpc = RpcStatus::decode(s.details()).unwrap();
        assert_eq!(rpc.code, Code::Unknown as i32);
        assert_eq!(rpc.details.len(), 3);
        let second = P4Error::decode(rpc.details[1].value.as_slice()).unwrap();
        assert_eq!(second.canonical_code, Code::NotFound as i32);
        assert_eq!(second.message, "no such entry");
        let first = P4Error::decode(rpc.details[0].value.as_slice()).unwrap();
        assert_eq!(first, P4Error::default());
        assert!(rpc.details.iter().all(|d| d.type_url == ERROR_TYPE_URL));
    }
}
