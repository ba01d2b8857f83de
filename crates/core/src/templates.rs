//! caldera's own Heat templates (`templates/` in the repository), embedded in the binary so the
//! Heat-native driver and the tests create the same stacks.

use crate::api::heat::StackCreate;
use std::collections::BTreeMap;

pub const NODEGROUP: &str = include_str!("../../../templates/cluster/nodegroup.yaml");
pub const NODE: &str = include_str!("../../../templates/cluster/node.yaml");
pub const CLUSTER: &str = include_str!("../../../templates/cluster/cluster.yaml");
pub const ENV_TEST: &str = include_str!("../../../templates/cluster/env-test.yaml");
pub const ENV_NOVA: &str = include_str!("../../../templates/cluster/env-nova.yaml");
pub const MACHINE_NOVA: &str = include_str!("../../../templates/cluster/machine-nova.yaml");

/// Which machines a node group's members get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Machines {
    /// `OS::Heat::TestResource` stand-ins: no cloud needed.
    Test,
    /// Real `OS::Nova::Server`s.
    Nova,
}

/// Parses a YAML document into the JSON shape the Heat API takes.
pub fn yaml_to_json(name: &str, text: &str) -> Result<serde_json::Value, String> {
    serde_yaml_ng::from_str::<serde_json::Value>(text).map_err(|e| format!("template {name}: {e}"))
}

/// A `POST /stacks` body for a node group of `count` members.
pub fn nodegroup_stack(
    name: &str,
    machines: Machines,
    parameters: BTreeMap<String, serde_json::Value>,
) -> Result<StackCreate, String> {
    let mut files = BTreeMap::new();
    files.insert("node.yaml".to_string(), NODE.to_string());
    let environment = match machines {
        Machines::Test => ENV_TEST,
        Machines::Nova => {
            files.insert("machine-nova.yaml".to_string(), MACHINE_NOVA.to_string());
            ENV_NOVA
        }
    };
    Ok(StackCreate {
        name: name.to_string(),
        template: yaml_to_json("nodegroup.yaml", NODEGROUP)?,
        files,
        environment: Some(yaml_to_json("environment", environment)?),
        parameters,
        ..Default::default()
    })
}

/// The address the test templates give member `index` (see `templates/cluster/node.yaml`).
pub fn test_address(index: u32) -> String {
    format!("10.0.{}.{}", index / 100, index % 100 + 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_templates_parse() {
        for (name, text) in [
            ("nodegroup", NODEGROUP),
            ("node", NODE),
            ("cluster", CLUSTER),
            ("env-test", ENV_TEST),
            ("env-nova", ENV_NOVA),
            ("machine-nova", MACHINE_NOVA),
        ] {
            let v = yaml_to_json(name, text).unwrap();
            assert!(v.is_object(), "{name} is not a mapping");
        }
        let create = nodegroup_stack("ng", Machines::Test, BTreeMap::new()).unwrap();
        assert!(create.files.contains_key("node.yaml"));
        assert_eq!(test_address(157), "10.0.1.67");
    }
}
