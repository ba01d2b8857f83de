//! Which Magnum driver runs a cluster: Magnum's Heat driver or a Cluster API driver.
//!
//! Magnum shows one id for what backs a cluster: `stack_id` up to 1.12, `cluster_id` from
//! 1.13. Under the Heat driver it is the Heat stack's id, always a UUID. The Cluster API
//! drivers write their own Cluster API cluster name into the same field:
//! - vexxhost `magnum-cluster-api` (`magnum_cluster_api/utils.py`,
//!   `generate_cluster_api_name`): `kube-` and 5 random characters from `[a-z0-9]`, set as
//!   `cluster.stack_id` at the start of `create_cluster` (`driver.py`).
//! - `magnum-capi-helm` (`magnum_capi_helm/driver.py`, `_generate_release_name`):
//!   the cluster name sanitised to `[a-z0-9-]` and cut to 30 characters, `-`, and Magnum's
//!   12-character short id (base32), lower case; it is the Helm release's name
//!   (`driver_utils.chart_release_name`). Its cluster templates carry the label
//!   `capi_helm_chart_version` (`_get_chart_version`).
//!
//! A cluster template may name its driver (`driver`, the entry point: `k8s_capi_helm_v1`,
//! `k8s_cluster_api_ubuntu`, ..., or a Heat driver such as `k8s_fedora_coreos_v1`); when it
//! does, that wins over the id's shape.

use crate::model::{CapiCluster, CapiDriver};
use std::collections::BTreeMap;

/// What a Magnum cluster's backing id means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backing {
    /// A Heat stack (its id).
    Heat(String),
    /// A Cluster API cluster: no Heat stack, nodes are Nova servers named after it.
    ClusterApi(CapiCluster),
    /// Nothing yet (a cluster being created before its driver named it).
    Unknown,
}

/// The facts of a cluster template that say which driver runs its clusters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TemplateFacts {
    pub driver: Option<String>,
    pub labels: BTreeMap<String, String>,
}

/// Heat stack ids are UUIDs (`8-4-4-4-12` hex digits).
pub fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit()))
}

/// `kube-` + 5 of `[a-z0-9]` (magnum-cluster-api's `generate_cluster_api_name`).
fn is_cluster_api_name(s: &str) -> bool {
    s.strip_prefix("kube-").is_some_and(|r| {
        r.len() == 5
            && r.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    })
}

/// `...-` + 12 of base32 `[a-z2-7]` (magnum-capi-helm's `_generate_release_name`).
fn is_capi_helm_release(s: &str) -> bool {
    s.rsplit_once('-').is_some_and(|(head, tail)| {
        !head.is_empty()
            && tail.len() == 12
            && tail
                .chars()
                .all(|c| c.is_ascii_lowercase() || ('2'..='7').contains(&c))
    })
}

/// The driver a template names, when it names one.
fn template_driver(t: &TemplateFacts) -> Option<Result<CapiDriver, ()>> {
    if let Some(d) = t.driver.as_deref() {
        if d == "k8s_capi_helm_v1" {
            return Some(Ok(CapiDriver::CapiHelm));
        }
        if d.starts_with("k8s_cluster_api") {
            return Some(Ok(CapiDriver::MagnumClusterApi));
        }
        if d.contains("capi") || d.contains("cluster_api") {
            return Some(Ok(CapiDriver::Unknown));
        }
        // Any other named driver is one of Magnum's Heat drivers.
        return Some(Err(()));
    }
    if t.labels.contains_key("capi_helm_chart_version") {
        return Some(Ok(CapiDriver::CapiHelm));
    }
    None
}

/// Classifies a cluster from its backing id (`cluster_id` or `stack_id`) and, when known,
/// its template.
pub fn classify(backing: Option<&str>, template: Option<&TemplateFacts>) -> Backing {
    let Some(id) = backing.filter(|s| !s.is_empty()) else {
        return Backing::Unknown;
    };
    match template.and_then(template_driver) {
        Some(Err(())) => return Backing::Heat(id.to_string()),
        Some(Ok(driver)) => {
            return Backing::ClusterApi(CapiCluster {
                driver,
                name: id.to_string(),
            })
        }
        None => {}
    }
    // A UUID is a Heat stack: checked first, as about one UUID in thirty also has the
    // shape of a capi-helm release (its last group all base32: `...-73ca7e73f5f3`).
    let driver = if is_uuid(id) {
        return Backing::Heat(id.to_string());
    } else if is_cluster_api_name(id) {
        CapiDriver::MagnumClusterApi
    } else if is_capi_helm_release(id) {
        CapiDriver::CapiHelm
    } else {
        // A UUID is a Heat stack; any other shape is taken as a Heat stack too (Heat
        // resolves names as well), unless the template says otherwise.
        return Backing::Heat(id.to_string());
    };
    Backing::ClusterApi(CapiCluster {
        driver,
        name: id.to_string(),
    })
}

/// Whether the id alone settles the verdict (a UUID is a Heat stack); otherwise the
/// template is worth one read.
pub fn id_is_conclusive(backing: Option<&str>) -> bool {
    backing.is_none_or(is_uuid)
}

#[cfg(test)]
mod tests {

    /// Seen on a real Magnum 22: stack `c6336221-bbae-422e-a445-73ca7e73f5f3` (its last group
    /// all `[a-f2-7]`) was taken for a capi-helm release and its nodes looked for in Nova.
    #[test]
    fn a_stack_uuid_that_looks_like_a_release_is_still_a_stack() {
        let id = "c6336221-bbae-422e-a445-73ca7e73f5f3";
        assert!(is_capi_helm_release(id), "the shape that misled");
        assert_eq!(classify(Some(id), None), Backing::Heat(id.into()));
        assert!(id_is_conclusive(Some(id)));
    }
    use super::*;

    fn capi(driver: CapiDriver, name: &str) -> Backing {
        Backing::ClusterApi(CapiCluster {
            driver,
            name: name.into(),
        })
    }

    #[test]
    fn ids_tell_heat_from_each_cluster_api_driver() {
        let heat = "0b8e5b1e-7c3a-4f0e-9a57-2f1d3c4b5a69";
        assert_eq!(classify(Some(heat), None), Backing::Heat(heat.into()));
        // magnum-cluster-api: `kube-` + 5 (utils.generate_cluster_api_name).
        assert_eq!(
            classify(Some("kube-7xk2q"), None),
            capi(CapiDriver::MagnumClusterApi, "kube-7xk2q")
        );
        // magnum-capi-helm: name[:30] + `-` + 12-character short id, lower case.
        assert_eq!(
            classify(Some("prod-ml-cluster-pyd4ltgh3qbm"), None),
            capi(CapiDriver::CapiHelm, "prod-ml-cluster-pyd4ltgh3qbm")
        );
        assert_eq!(
            classify(Some("something-else"), None),
            Backing::Heat("something-else".into()),
            "an unknown shape stays Heat's, as before"
        );
        assert!(id_is_conclusive(Some(heat)) && !id_is_conclusive(Some("kube-7xk2q")));
        assert_eq!(classify(None, None), Backing::Unknown);
        assert_eq!(classify(Some(""), None), Backing::Unknown);
        assert!(!is_uuid("kube-7xk2q"));
        assert!(!is_uuid("0b8e5b1e-7c3a-4f0e-9a57-2f1d3c4b5a6z"));
    }

    #[test]
    fn a_template_that_names_its_driver_wins() {
        let helm = TemplateFacts {
            driver: None,
            labels: [("capi_helm_chart_version".to_string(), "0.10.1".to_string())].into(),
        };
        assert_eq!(
            classify(Some("something-else"), Some(&helm)),
            capi(CapiDriver::CapiHelm, "something-else")
        );
        let vexx = TemplateFacts {
            driver: Some("k8s_cluster_api_flatcar".into()),
            ..Default::default()
        };
        assert_eq!(
            classify(Some("kube-abcde"), Some(&vexx)),
            capi(CapiDriver::MagnumClusterApi, "kube-abcde")
        );
        let heat = TemplateFacts {
            driver: Some("k8s_fedora_coreos_v1".into()),
            ..Default::default()
        };
        assert_eq!(
            classify(Some("my-stack"), Some(&heat)),
            Backing::Heat("my-stack".into())
        );
    }
}
