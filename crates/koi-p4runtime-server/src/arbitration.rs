//! Client arbitration for one device: which live controller of each role is the primary, by
//! election id, and who is told what when that changes (P4Runtime spec, "Client Arbitration
//! and Controller Replication").
//!
//! For each role (`""` is the default role) the device remembers the highest election id it
//! has ever received (`highest`). The primary is the live controller whose election id equals
//! it; there may be none (the primary left, or downgraded itself). A controller without an
//! election id never becomes primary. Election ids are unique among the live controllers of a
//! role. This module is pure bookkeeping: it returns the advisory messages to send, and the
//! caller sends them.
//!
//! Role configs (`role.config`) are refused with UNIMPLEMENTED: koi knows no role scheme, and
//! every role has full pipeline access.

use koi_proto::google_rpc::Status as RpcStatus;
use koi_proto::p4runtime::{MasterArbitrationUpdate, Role, Uint128};
use std::collections::HashMap;
use tonic::Code;

/// The most controllers one role may have connected at once.
pub const MAX_CONTROLLERS: usize = 64;

/// Identifies one `StreamChannel`.
pub type StreamId = u64;

/// A live controller of a role.
#[derive(Clone, Debug)]
struct Controller {
    stream: StreamId,
    election_id: Option<u128>,
}

/// One role's controllers.
#[derive(Debug, Default)]
struct RoleState {
    controllers: Vec<Controller>,
    /// The highest election id ever received for this role (reset only by a restart).
    highest: Option<u128>,
}

impl RoleState {
    fn primary(&self) -> Option<StreamId> {
        let h = self.highest?;
        self.controllers
            .iter()
            .find(|c| c.election_id == Some(h))
            .map(|c| c.stream)
    }
}

/// What a stream is, once its first arbitration update was accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Membership {
    pub role: String,
}

/// A message to send to one stream.
pub type Advisory = (StreamId, MasterArbitrationUpdate);

/// The arbitration state of one device.
#[derive(Debug)]
pub struct Arbitration {
    device_id: u64,
    roles: HashMap<String, RoleState>,
    /// The role of each live stream.
    members: HashMap<StreamId, String>,
}

/// An election id as a number.
pub fn election_id(e: &Option<Uint128>) -> Option<u128> {
    e.as_ref()
        .map(|e| (u128::from(e.high) << 64) | u128::from(e.low))
}

fn uint128(v: u128) -> Uint128 {
    Uint128 {
        high: (v >> 64) as u64,
        low: v as u64,
    }
}

/// A refusal that ends the stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub code: Code,
    pub message: String,
}

fn refuse(code: Code, message: impl Into<String>) -> Refusal {
    Refusal {
        code,
        message: message.into(),
    }
}

impl Arbitration {
    pub fn new(device_id: u64) -> Arbitration {
        Arbitration {
            device_id,
            roles: HashMap::new(),
            members: HashMap::new(),
        }
    }

    /// Handles a `MasterArbitrationUpdate` received on `stream`. `Err` terminates the stream
    /// with that status; `Ok` holds the advisories to send.
    pub fn update(
        &mut self,
        stream: StreamId,
        m: &MasterArbitrationUpdate,
    ) -> Result<Vec<Advisory>, Refusal> {
        let role = m.role.as_ref().map_or("", |r| r.name.as_str()).to_string();
        let eid = election_id(&m.election_id);
        match self.members.get(&stream) {
            None => {
                if m.device_id != self.device_id {
                    return Err(refuse(Code::NotFound, format!("no device {}", m.device_id)));
                }
            }
            Some(r) => {
                if m.device_id != self.device_id {
                    return Err(refuse(
                        Code::FailedPrecondition,
                        format!(
                            "this stream belongs to device {}, not {}",
                            self.device_id, m.device_id
                        ),
                    ));
                }
                if *r != role {
                    return Err(refuse(
                        Code::FailedPrecondition,
                        format!(
                            "this stream has role `{r}`; to change role open a new stream (asked for `{role}`)"
                        ),
                    ));
                }
            }
        }
        if m.role.as_ref().is_some_and(|r| r.config.is_some()) {
            return Err(refuse(
                Code::Unimplemented,
                "role configs are not supported: every role has full pipeline access",
            ));
        }
        let rs = self.roles.entry(role.clone()).or_default();
        if let Some(e) = eid
            && rs
                .controllers
                .iter()
                .any(|c| c.stream != stream && c.election_id == Some(e))
        {
            return Err(refuse(
                Code::InvalidArgument,
                format!("election id {e} is used by another controller of this role"),
            ));
        }
        let was_primary = rs.primary() == Some(stream);
        match rs.controllers.iter_mut().find(|c| c.stream == stream) {
            Some(c) => c.election_id = eid,
            None => {
                if rs.controllers.len() >= MAX_CONTROLLERS {
                    return Err(refuse(
                        Code::ResourceExhausted,
                        format!("at most {MAX_CONTROLLERS} controllers per role"),
                    ));
                }
                rs.controllers.push(Controller {
                    stream,
                    election_id: eid,
                });
                self.members.insert(stream, role.clone());
            }
        }
        let becomes_primary = eid.is_some_and(|e| rs.highest.is_none_or(|h| e >= h));
        if becomes_primary {
            rs.highest = eid;
            // A new primary, or the primary confirmed: everyone of the role hears of it.
            return Ok(self.advise_all(&role));
        }
        if was_primary {
            // The primary downgraded itself: there is no primary now.
            return Ok(self.advise_all(&role));
        }
        Ok(vec![(stream, self.advisory(&role, stream))])
    }

    /// A stream ended; returns the advisories to send (the primary left: the others hear it).
    pub fn leave(&mut self, stream: StreamId) -> Vec<Advisory> {
        let Some(role) = self.members.remove(&stream) else {
            return Vec::new();
        };
        let Some(rs) = self.roles.get_mut(&role) else {
            return Vec::new();
        };
        let was_primary = rs.primary() == Some(stream);
        rs.controllers.retain(|c| c.stream != stream);
        if was_primary {
            self.advise_all(&role)
        } else {
            Vec::new()
        }
    }

    /// The role of a live stream.
    pub fn role_of(&self, stream: StreamId) -> Option<&str> {
        self.members.get(&stream).map(String::as_str)
    }

    /// Whether `stream` is the primary of its role.
    pub fn is_primary(&self, stream: StreamId) -> bool {
        self.members
            .get(&stream)
            .and_then(|r| self.roles.get(r))
            .is_some_and(|rs| rs.primary() == Some(stream))
    }

    /// The primary stream of `role`, if any.
    pub fn primary(&self, role: &str) -> Option<StreamId> {
        self.roles.get(role).and_then(RoleState::primary)
    }

    /// Whether a request with this role and election id comes from the role's primary
    /// (`Ok`), else why not (PERMISSION_DENIED; NOT_FOUND for a role nobody arbitrated for).
    pub fn check_primary(&self, role: &str, election_id: Option<u128>) -> Result<(), Refusal> {
        let Some(rs) = self.roles.get(role) else {
            return Err(refuse(
                Code::PermissionDenied,
                format!(
                    "no controller is primary for role `{role}` of device {}: open a StreamChannel and send a MasterArbitrationUpdate first",
                    self.device_id
                ),
            ));
        };
        match (rs.primary(), election_id) {
            (Some(_), Some(e)) if Some(e) == rs.highest => Ok(()),
            (None, _) => Err(refuse(
                Code::PermissionDenied,
                format!("role `{role}` of device {} has no primary", self.device_id),
            )),
            (Some(_), None) => Err(refuse(
                Code::PermissionDenied,
                "the request has no election id; only the primary may write",
            )),
            (Some(_), Some(e)) => Err(refuse(
                Code::PermissionDenied,
                format!("election id {e} is not the primary's; only the primary may write"),
            )),
        }
    }

    /// The advisory for every controller of `role`.
    fn advise_all(&self, role: &str) -> Vec<Advisory> {
        let Some(rs) = self.roles.get(role) else {
            return Vec::new();
        };
        rs.controllers
            .iter()
            .map(|c| (c.stream, self.advisory(role, c.stream)))
            .collect()
    }

    /// The arbitration update that tells `stream` where it stands in `role`.
    fn advisory(&self, role: &str, stream: StreamId) -> MasterArbitrationUpdate {
        let rs = self.roles.get(role);
        let highest = rs.and_then(|r| r.highest);
        let primary = rs.and_then(RoleState::primary);
        let (code, message) = match primary {
            Some(p) if p == stream => (Code::Ok, "primary".to_string()),
            Some(_) => (
                Code::AlreadyExists,
                "backup: another controller is primary".into(),
            ),
            None => (Code::NotFound, "backup: there is no primary".into()),
        };
        MasterArbitrationUpdate {
            device_id: self.device_id,
            role: (!role.is_empty()).then(|| Role {
                name: role.to_string(),
                ..Default::default()
            }),
            election_id: highest.map(uint128),
            status: Some(RpcStatus {
                code: code as i32,
                message,
                details: Vec::new(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upd(device: u64, role: &str, eid: Option<u128>) -> MasterArbitrationUpdate {
        MasterArbitrationUpdate {
            device_id: device,
            role: (!role.is_empty()).then(|| Role {
                name: role.into(),
                ..Default::default()
            }),
            election_id: eid.map(uint128),
            status: None,
        }
    }

    fn codes(adv: &[Advisory]) -> Vec<(StreamId, i32)> {
        let mut v: Vec<(StreamId, i32)> = adv
            .iter()
            .map(|(s, m)| (*s, m.status.as_ref().unwrap().code))
            .collect();
        v.sort();
        v
    }

    const OK: i32 = Code::Ok as i32;
    const EXISTS: i32 = Code::AlreadyExists as i32;
    const NONE: i32 = Code::NotFound as i32;

    #[test]
    fn the_highest_election_id_is_primary_and_everyone_hears_of_a_change() {
        let mut a = Arbitration::new(1);
        let adv = a.update(10, &upd(1, "", Some(5))).unwrap();
        assert_eq!(codes(&adv), vec![(10, OK)]);
        assert_eq!(election_id(&adv[0].1.election_id), Some(5));
        // A lower one becomes a backup and only it hears of it.
        let adv = a.update(11, &upd(1, "", Some(3))).unwrap();
        assert_eq!(codes(&adv), vec![(11, EXISTS)]);
        assert_eq!(election_id(&adv[0].1.election_id), Some(5));
        assert!(a.is_primary(10) && !a.is_primary(11));
        // A higher one takes over; both hear.
        let adv = a.update(12, &upd(1, "", Some(9))).unwrap();
        assert_eq!(codes(&adv), vec![(10, EXISTS), (11, EXISTS), (12, OK)]);
        assert!(a.check_primary("", Some(9)).is_ok());
        assert_eq!(
            a.check_primary("", Some(5)).unwrap_err().code,
            Code::PermissionDenied
        );
        // The primary leaves: no primary, the others are told NOT_FOUND with the highest id.
        let adv = a.leave(12);
        assert_eq!(codes(&adv), vec![(10, NONE), (11, NONE)]);
        assert!(
            adv.iter()
                .all(|(_, m)| election_id(&m.election_id) == Some(9))
        );
        assert_eq!(a.primary(""), None);
        assert_eq!(
            a.check_primary("", Some(9)).unwrap_err().code,
            Code::PermissionDenied
        );
        // 5 is below the highest ever seen (9): still a backup.
        let adv = a.update(10, &upd(1, "", Some(5))).unwrap();
        assert_eq!(codes(&adv), vec![(10, NONE)]);
        // 9 again becomes primary.
        let adv = a.update(11, &upd(1, "", Some(9))).unwrap();
        assert_eq!(codes(&adv), vec![(10, EXISTS), (11, OK)]);
    }

    #[test]
    fn a_primary_that_downgrades_itself_leaves_no_primary() {
        let mut a = Arbitration::new(1);
        a.update(1, &upd(1, "", Some(7))).unwrap();
        a.update(2, &upd(1, "", Some(2))).unwrap();
        let adv = a.update(1, &upd(1, "", Some(4))).unwrap();
        assert_eq!(codes(&adv), vec![(1, NONE), (2, NONE)]);
        assert!(!a.is_primary(1));
        // A leaving backup tells nobody.
        assert!(a.leave(2).is_empty());
    }

    #[test]
    fn refusals_carry_the_specs_codes() {
        let mut a = Arbitration::new(1);
        assert_eq!(
            a.update(1, &upd(2, "", Some(1))).unwrap_err().code,
            Code::NotFound
        );
        a.update(1, &upd(1, "", Some(1))).unwrap();
        assert_eq!(
            a.update(2, &upd(1, "", Some(1))).unwrap_err().code,
            Code::InvalidArgument,
            "an election id in use"
        );
        assert_eq!(
            a.update(1, &upd(3, "", Some(1))).unwrap_err().code,
            Code::FailedPrecondition,
            "another device on the same stream"
        );
        assert_eq!(
            a.update(1, &upd(1, "r", Some(1))).unwrap_err().code,
            Code::FailedPrecondition,
            "another role on the same stream"
        );
        let mut with_config = upd(1, "r", Some(1));
        with_config.role.as_mut().unwrap().config = Some(prost_types::Any::default());
        assert_eq!(
            a.update(5, &with_config).unwrap_err().code,
            Code::Unimplemented
        );
        // The same election id in another role is fine.
        let adv = a.update(3, &upd(1, "r", Some(1))).unwrap();
        assert_eq!(codes(&adv), vec![(3, OK)]);
        assert_eq!(adv[0].1.role.as_ref().unwrap().name, "r");
    }

    #[test]
    fn an_unset_election_id_never_becomes_primary() {
        let mut a = Arbitration::new(1);
        let adv = a.update(1, &upd(1, "", None)).unwrap();
        assert_eq!(codes(&adv), vec![(1, NONE)]);
        assert!(adv[0].1.election_id.is_none(), "no primary ever: unset");
        // (0, 0) is a real election id, above unset.
        let adv = a.update(2, &upd(1, "", Some(0))).unwrap();
        assert_eq!(codes(&adv), vec![(1, EXISTS), (2, OK)]);
        assert_eq!(
            a.check_primary("", None).unwrap_err().code,
            Code::PermissionDenied
        );
    }
}
