//! Maps nested stack ids to resource paths from the root stack, so a nested event reads
//! `nodes > 17 > server` instead of an opaque generated stack name.

use crate::model::{StackRef, StackResource};
use std::collections::HashMap;

#[derive(Debug, Clone, Default)]
pub struct StackPaths {
    root_id: String,
    /// nested stack id -> (owning stack id, resource name in the owner)
    parent_of: HashMap<String, (String, String)>,
}

impl StackPaths {
    pub fn new(root: &StackRef) -> Self {
        StackPaths {
            root_id: root.id.clone(),
            parent_of: HashMap::new(),
        }
    }

    /// Learns the nesting from a resource listing (any nested depth). Later listings add to it.
    pub fn learn(&mut self, resources: &[StackResource]) {
        for resource in resources {
            if let Some(nested) = &resource.nested {
                let owner = resource
                    .owner
                    .as_ref()
                    .map(|o| o.id.clone())
                    .unwrap_or_else(|| self.root_id.clone());
                self.parent_of
                    .insert(nested.id.clone(), (owner, resource.name.clone()));
            }
        }
    }

    /// Path of resource names from the root down to `stack_id`; `None` if not known yet.
    pub fn path_of(&self, stack_id: &str) -> Option<Vec<String>> {
        let mut path = Vec::new();
        let mut current = stack_id;
        // Bounded walk: a malformed listing with a cycle must not hang the console.
        for _ in 0..64 {
            if current == self.root_id {
                path.reverse();
                return Some(path);
            }
            let (owner, name) = self.parent_of.get(current)?;
            path.push(name.clone());
            current = owner;
        }
        None
    }

    /// Path of names from the root down to resource `r` itself (`nodes`, `17`, `server`; the
    /// console's tree spells it `nodes > 17 > server`). A resource whose owner is not known yet
    /// is taken as the root's.
    pub fn resource_path(&self, r: &StackResource) -> Vec<String> {
        let mut parts = r
            .owner
            .as_ref()
            .and_then(|o| self.path_of(&o.id))
            .unwrap_or_default();
        parts.push(r.name.clone());
        parts
    }

    pub fn knows(&self, stack_id: &str) -> bool {
        stack_id == self.root_id || self.parent_of.contains_key(stack_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Status;

    fn r(name: &str, owner: &str, nested: Option<&str>) -> StackResource {
        StackResource {
            name: name.into(),
            logical_id: name.into(),
            physical_id: None,
            resource_type: "T".into(),
            status: Status::parse("CREATE_COMPLETE"),
            status_reason: None,
            updated_at: None,
            owner: Some(StackRef {
                name: owner.into(),
                id: owner.into(),
            }),
            nested: nested.map(|n| StackRef {
                name: n.into(),
                id: n.into(),
            }),
            parent_resource: None,
            required_by: vec![],
        }
    }

    #[test]
    fn resolves_nested_paths() {
        let root = StackRef {
            name: "root".into(),
            id: "root".into(),
        };
        let mut paths = StackPaths::new(&root);
        paths.learn(&[
            r("nodes", "root", Some("g")),
            r("17", "g", Some("m17")),
            r("server", "m17", None),
        ]);
        assert_eq!(paths.path_of("root"), Some(vec![]));
        assert_eq!(paths.path_of("g"), Some(vec!["nodes".to_string()]));
        assert_eq!(
            paths.path_of("m17"),
            Some(vec!["nodes".to_string(), "17".to_string()])
        );
        assert_eq!(paths.path_of("unknown"), None);
    }

    #[test]
    fn cycle_does_not_hang() {
        let root = StackRef {
            name: "root".into(),
            id: "root".into(),
        };
        let mut paths = StackPaths::new(&root);
        paths.learn(&[r("a", "x", Some("y")), r("b", "y", Some("x"))]);
        assert_eq!(paths.path_of("x"), None);
    }
}
