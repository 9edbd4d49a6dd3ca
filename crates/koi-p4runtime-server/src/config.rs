//! `SetForwardingPipelineConfig` and `GetForwardingPipelineConfig`.
//!
//! The device config is koi's (see `koi_runtime::program`: the preprocessed P4 program, raw,
//! wrapped in `p4.tmp.P4DeviceConfig`, or plain P4 source). koi compiles it and derives the
//! program's P4Info; the P4Info the controller sent must agree with it in everything a
//! controller relies on (ids, names, match fields, parameters, types: koi's P4Info comparison
//! after documentation, annotations and `pkg_info` are set aside), else the request fails with
//! INVALID_ARGUMENT listing the differences. The controller's P4Info and cookie are what Get
//! returns afterwards.
//!
//! Actions: VERIFY checks; VERIFY_AND_SAVE checks and saves (Read and Write then act on the
//! saved config's own fresh state, and COMMIT loads that state); VERIFY_AND_COMMIT loads the
//! program with a fresh state; COMMIT loads the saved config; RECONCILE_AND_COMMIT loads it
//! with the forwarding state carried over ([`koi_runtime::Pipeline::swap`]: entries,
//! profiles, registers, counters, meters, groups and sessions whose names and types still
//! fit, and the controller's own records with them), or fails with INVALID_ARGUMENT listing
//! what cannot be carried, changing nothing. A load swaps the pipeline's image while the
//! ports, the poll threads and this server keep running.

use crate::device::{Device, Saved};
use crate::status::status;
use koi_p4runtime::Target;
use koi_proto::p4info::P4Info;
use koi_proto::p4runtime::{
    ForwardingPipelineConfig, GetForwardingPipelineConfigRequest,
    GetForwardingPipelineConfigResponse, SetForwardingPipelineConfigRequest,
    get_forwarding_pipeline_config_request::ResponseType,
    set_forwarding_pipeline_config_request::Action,
};
use koi_runtime::Program;
use prost::Message;
use prost_reflect::{DynamicMessage, ReflectMessage, Value};
use std::sync::Arc;
use tonic::{Code, Status};

/// The most differences listed in an INVALID_ARGUMENT answer.
const MAX_DIFFERENCES: usize = 20;

/// P4Info fields that document rather than define: left out of the comparison.
const DOCUMENTATION: &[&str] = &[
    "annotations",
    "structured_annotations",
    "doc",
    "annotation_locations",
    "source_location",
];

/// `p` without documentation, annotations and package info.
fn essentials(p: &P4Info) -> P4Info {
    let Ok(pool) = koi_proto::descriptor_pool() else {
        return p.clone();
    };
    let Some(desc) = pool.get_message_by_name("p4.config.v1.P4Info") else {
        return p.clone();
    };
    let Ok(mut m) = DynamicMessage::decode(desc, p.encode_to_vec().as_slice()) else {
        return p.clone();
    };
    m.clear_field_by_name("pkg_info");
    strip(&mut m);
    P4Info::decode(m.encode_to_vec().as_slice()).unwrap_or_else(|_| p.clone())
}

/// Clears the documentation fields of `m` and of every message inside it.
fn strip(m: &mut DynamicMessage) {
    let fields: Vec<_> = m.descriptor().fields().collect();
    for f in fields {
        if DOCUMENTATION.contains(&f.name()) {
            m.clear_field(&f);
            continue;
        }
        if !m.has_field(&f) {
            continue;
        }
        match m.get_field_mut(&f) {
            Value::Message(inner) => strip(inner),
            Value::List(items) => items.iter_mut().for_each(|v| {
                if let Value::Message(inner) = v {
                    strip(inner)
                }
            }),
            Value::Map(map) => map.values_mut().for_each(|v| {
                if let Value::Message(inner) = v {
                    strip(inner)
                }
            }),
            _ => {}
        }
    }
}

/// The differences that matter between koi's P4Info for the program and the controller's.
pub fn p4info_differences(koi: &P4Info, controller: &P4Info) -> Vec<String> {
    koi_proto::compare(&essentials(koi), &essentials(controller))
}

/// Compiles a config's program and checks the controller's P4Info against koi's.
fn check(config: &ForwardingPipelineConfig) -> Result<Arc<Program>, Status> {
    let program = Program::from_device_config(&config.p4_device_config).map_err(|e| {
        status(
            Code::InvalidArgument,
            format!("the device config does not compile:\n{e}"),
        )
    })?;
    let koi_info = program.p4info.as_ref().map_err(|e| {
        status(
            Code::InvalidArgument,
            format!("koi cannot derive a P4Info for this program: {e}"),
        )
    })?;
    let Some(theirs) = &config.p4info else {
        return Err(status(Code::InvalidArgument, "the config has no P4Info"));
    };
    let diffs = p4info_differences(koi_info, theirs);
    if !diffs.is_empty() {
        let shown: Vec<&str> = diffs
            .iter()
            .take(MAX_DIFFERENCES)
            .map(String::as_str)
            .collect();
        return Err(status(
            Code::InvalidArgument,
            format!(
                "the P4Info does not match the program ({} differences, koi's side first):\n{}{}",
                diffs.len(),
                shown.join("\n"),
                if diffs.len() > MAX_DIFFERENCES {
                    "\n..."
                } else {
                    ""
                }
            ),
        ));
    }
    Ok(Arc::new(program))
}

/// [`check`], then builds the program's state and datapath as a load would.
fn verify(
    d: &Device,
    config: &ForwardingPipelineConfig,
) -> Result<(Arc<Program>, koi_state::State), Status> {
    let program = check(config)?;
    let state = d.pipeline.verify(&program, |_| Ok(())).map_err(|e| {
        status(
            Code::InvalidArgument,
            format!("koi cannot run the program: {e}"),
        )
    })?;
    Ok((program, state))
}

/// `SetForwardingPipelineConfig` on device `d`, once the caller checked that it comes from
/// the primary. Runs on a blocking thread (it compiles).
pub fn set(d: &Device, req: &SetForwardingPipelineConfigRequest) -> Result<(), Status> {
    let action = Action::try_from(req.action).unwrap_or(Action::Unspecified);
    let config = req.config.as_ref();
    let need = || {
        config.ok_or_else(|| {
            status(
                Code::InvalidArgument,
                format!("{} needs a config", action.as_str_name()),
            )
        })
    };
    match action {
        Action::Unspecified => Err(status(
            Code::InvalidArgument,
            "SetForwardingPipelineConfig: no action given",
        )),
        Action::Verify => verify(d, need()?).map(drop),
        Action::VerifyAndSave => {
            let config = need()?;
            let (program, state) = verify(d, config)?;
            let target = target(&program, &state)?;
            let mut v = d.view();
            v.saved = Some(Saved {
                program,
                state,
                target,
                config: config.clone(),
            });
            Ok(())
        }
        Action::VerifyAndCommit => {
            let config = need()?;
            let program = check(config)?;
            let mut v = d.view();
            let image = d.pipeline.load(program, |_| Ok(())).map_err(|e| {
                status(
                    Code::InvalidArgument,
                    format!("koi cannot run the program: {e}"),
                )
            })?;
            d.bind_loaded(&mut v, &image, config.clone());
            Ok(())
        }
        Action::Commit => {
            if config.is_some() {
                return Err(status(
                    Code::InvalidArgument,
                    "COMMIT takes no config: it loads the one VERIFY_AND_SAVE saved",
                ));
            }
            let mut v = d.view();
            let Some(saved) = v.saved.take() else {
                return Err(status(
                    Code::NotFound,
                    "COMMIT: no config was saved (VERIFY_AND_SAVE first)",
                ));
            };
            let Saved {
                program,
                state,
                config,
                ..
            } = saved;
            let image = d
                .pipeline
                .load(program, move |s| {
                    *s = state;
                    Ok(())
                })
                .map_err(|e| status(Code::Internal, e))?;
            d.bind_loaded(&mut v, &image, config);
            Ok(())
        }
        Action::ReconcileAndCommit => {
            // The forwarding state carried over to the new program (koi_state::carry's
            // rules); what cannot be is INVALID_ARGUMENT, listed, and nothing changes.
            let config = need()?;
            let program = check(config)?;
            let mut v = d.view();
            let report = d
                .pipeline
                .swap(program, false)
                .map_err(|e| status(Code::InvalidArgument, e))?;
            tracing::info!(device = d.id, "{}", report.to_string().trim_end());
            // Swapped again since (koi ctl load): the view binds the newest when next used.
            if let Some(image) = report.image.upgrade() {
                d.bind_loaded(&mut v, &image, config.clone());
            }
            Ok(())
        }
    }
}

fn target(program: &Program, state: &koi_state::State) -> Result<Target, Status> {
    let info = program
        .p4info
        .as_ref()
        .map_err(|e| status(Code::InvalidArgument, e.clone()))?;
    Target::new(info.clone(), state).map_err(|e| status(e.code, e.message))
}

/// `GetForwardingPipelineConfig` on device `d`.
pub fn get(
    d: &Device,
    req: &GetForwardingPipelineConfigRequest,
) -> GetForwardingPipelineConfigResponse {
    let v = d.view();
    let config = v
        .saved
        .as_ref()
        .map(|s| s.config.clone())
        .or_else(|| v.bound.as_ref().map(|b| b.config.clone()));
    drop(v);
    let rt = ResponseType::try_from(req.response_type).unwrap_or(ResponseType::All);
    let config = config.map(|c| match rt {
        ResponseType::All => c,
        ResponseType::CookieOnly => ForwardingPipelineConfig {
            cookie: c.cookie,
            ..Default::default()
        },
        ResponseType::P4infoAndCookie => ForwardingPipelineConfig {
            p4info: c.p4info,
            cookie: c.cookie,
            ..Default::default()
        },
        ResponseType::DeviceConfigAndCookie => ForwardingPipelineConfig {
            p4_device_config: c.p4_device_config,
            cookie: c.cookie,
            ..Default::default()
        },
    });
    GetForwardingPipelineConfigResponse { config }
}

#[cfg(test)]
mod tests {
    use super::*;
    use koi_proto::p4info::{Preamble, Table};

    #[test]
    fn documentation_and_annotations_do_not_count_but_ids_do() {
        let table = |id: u32, anno: &str| Table {
            preamble: Some(Preamble {
                id,
                name: "I.t".into(),
                alias: "t".into(),
                annotations: vec![anno.into()],
                ..Default::default()
            }),
            size: 1024,
            ..Default::default()
        };
        let a = P4Info {
            tables: vec![table(7, "@a")],
            ..Default::default()
        };
        let b = P4Info {
            tables: vec![table(7, "@b")],
            ..Default::default()
        };
        assert!(!koi_proto::compare(&a, &b).is_empty());
        assert!(p4info_differences(&a, &b).is_empty());
        let c = P4Info {
            tables: vec![table(8, "@a")],
            ..Default::default()
        };
        let diffs = p4info_differences(&a, &c);
        assert!(!diffs.is_empty());
        assert!(diffs.iter().any(|l| l.contains("I.t")), "{diffs:?}");
    }
}
