//! Heat's software configs and deployments, as rows the simulated Heat serves at
//! `/software_configs/{id}` and `/software_deployments[/{id}]`, and the demo's: a config run
//! on every worker of a cluster, signalled back by each server's agent in 30-40 s, except
//! where a scenario wants an agent that never signals or a script that fails.

use super::{Action, Resource, State, Status, World};
use serde_json::{json, Value};

/// A config as Heat derives it for one deployment resource (the template's config plus
/// the `deploy_*` inputs with their values).
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub id: String,
    pub name: String,
    pub group: &'static str,
    pub config: String,
    pub transport: &'static str,
    pub server_id: String,
}

/// One deployment row: `status` is Heat's `IN_PROGRESS`/`COMPLETE`/`FAILED`, `action` apart.
#[derive(Debug, Clone)]
pub struct SimDeployment {
    pub id: String,
    pub server_id: String,
    pub config_id: String,
    pub action: Action,
    pub status: State,
    pub status_reason: String,
    pub created_ms: i64,
    pub updated_ms: Option<i64>,
    pub output_values: Value,
}

/// How a demo deployment ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Signalled with code 0 after this many seconds.
    Signalled(i64),
    /// Never signalled: stays `IN_PROGRESS`.
    Silent,
    /// The script exits 2 with a stderr after this many seconds.
    Fails(i64),
}

pub const DEMO_CONFIG_NAME: &str = "kube_minion_config";
const DEMO_SCRIPT: &str =
    "#!/bin/sh\nset -e\nmkfs.ext4 -F /dev/vdb\nsystemctl enable --now kubelet\n";
const DEMO_STDERR: &str = "+ mkfs.ext4 -F /dev/vdb\nmke2fs 1.47.0 (5-Feb-2023)\nThe file /dev/vdb does not exist and no size was specified.\n";

impl World {
    /// Adds a deployment of the demo's config to the member stack `stack` (resource
    /// `node_config`, `OS::Heat::SoftwareDeployment`) for `server_id`, started at `started`
    /// for `action`, ending as `ending` says; the resource's status follows the row.
    pub fn add_deployment(
        &mut self,
        stack: usize,
        server_id: &str,
        action: Action,
        started: i64,
        ending: Ending,
    ) {
        let config_id = self.ids.uuid();
        let id = self.ids.uuid();
        self.sw_configs.push(SimConfig {
            id: config_id.clone(),
            name: DEMO_CONFIG_NAME.into(),
            group: "script",
            config: DEMO_SCRIPT.into(),
            transport: "HEAT_SIGNAL",
            server_id: server_id.into(),
        });
        let (state, updated, reason, outputs) = match ending {
            Ending::Signalled(secs) => (
                State::Complete,
                Some(started + secs * 1000),
                "Outputs received".to_string(),
                json!({"deploy_status_code": 0, "deploy_stdout": "kubelet enabled\n", "deploy_stderr": ""}),
            ),
            Ending::Silent => (
                State::InProgress,
                None,
                "Deploy data available".into(),
                json!({}),
            ),
            Ending::Fails(secs) => (
                State::Failed,
                Some(started + secs * 1000),
                "deploy_status_code : Deployment exited with non-zero status code: 2".into(),
                json!({"deploy_status_code": 2, "deploy_stdout": "", "deploy_stderr": DEMO_STDERR}),
            ),
        };
        self.sw_deployments.push(SimDeployment {
            id: id.clone(),
            server_id: server_id.into(),
            config_id,
            action,
            status: state,
            status_reason: reason.clone(),
            created_ms: started,
            updated_ms: updated,
            output_values: outputs,
        });
        let resource = Resource {
            name: self.intern("node_config"),
            rtype: self.intern("OS::Heat::SoftwareDeployment"),
            physical_id: id,
            status: Status::new(action, state),
            reason: match state {
                State::Failed => format!("Error: resources.node_config: {reason}"),
                State::Complete => "state changed".into(),
                State::InProgress => "state changed".into(),
            },
            created_ms: started,
            updated_ms: updated.unwrap_or(started),
            nested: None,
            required_by: vec![],
            value: None,
            description: "",
        };
        if let Some(st) = self.stack_mut(stack) {
            st.resources.retain(|r| &*r.name != "node_config");
            st.resources.push(resource);
        }
    }

    /// Moves the deployments' times with the rest of the world (see `shift_times`).
    pub(super) fn shift_deployments(&mut self, delta: i64) {
        for d in &mut self.sw_deployments {
            d.created_ms += delta;
            if let Some(u) = d.updated_ms.as_mut() {
                *u += delta;
            }
        }
    }
}
