//! Guard rails every action passes before it touches the cloud: read-only mode (the
//! `--read-only` flag, or `caldera: {read_only: true}` on the cloud in clouds.yaml) blocks all
//! of them; on a cloud marked `production: true`, fleet-wide actions (a scale, a rollout,
//! a node-group delete) need the cluster's name typed back as confirmation.

use super::refused;
use crate::config::CalderaSettings;
use crate::report::ServiceResult;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Guard {
    pub read_only: bool,
    pub production: bool,
}

/// How wide an action reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// One node or a few marked nodes.
    Nodes,
    /// A whole node group or cluster.
    Fleet,
}

impl Guard {
    /// The cloud's settings, with the command-line flag able to add read-only (never remove it).
    pub fn new(settings: CalderaSettings, read_only_flag: bool) -> Guard {
        Guard {
            read_only: settings.read_only || read_only_flag,
            production: settings.production,
        }
    }

    /// `confirm` is what the operator typed (`--confirm NAME`, or the console's prompt).
    pub fn check(
        &self,
        action: &str,
        cluster: &str,
        reach: Reach,
        confirm: Option<&str>,
    ) -> ServiceResult<()> {
        if self.read_only {
            return Err(refused(format!(
                "{action} refused: read-only mode (this cloud has `caldera: {{read_only: true}}` \
                 in clouds.yaml, or --read-only was given)"
            )));
        }
        if self.production && reach == Reach::Fleet && confirm != Some(cluster) {
            return Err(refused(match confirm {
                None => format!(
                    "{action} on production cluster '{cluster}' needs confirmation: \
                     type the cluster name (--confirm {cluster})"
                ),
                Some(other) => format!(
                    "{action} refused: confirmation '{other}' does not match the cluster name \
                     '{cluster}'"
                ),
            }));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::ErrorKind;

    #[test]
    fn read_only_blocks_everything_and_production_wants_the_name() {
        let ro = Guard::new(
            CalderaSettings {
                read_only: true,
                production: false,
                ..Default::default()
            },
            false,
        );
        let e = ro
            .check("scale", "c1", Reach::Nodes, Some("c1"))
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Refused);
        assert!(e.message.contains("read-only"));
        assert!(Guard::new(CalderaSettings::default(), true)
            .check("scale", "c1", Reach::Nodes, None)
            .is_err());

        let prod = Guard::new(
            CalderaSettings {
                read_only: false,
                production: true,
                ..Default::default()
            },
            false,
        );
        let e = prod.check("rollout", "c1", Reach::Fleet, None).unwrap_err();
        assert!(e.message.contains("--confirm c1"), "{e}");
        assert!(prod
            .check("rollout", "c1", Reach::Fleet, Some("c2"))
            .is_err());
        assert!(prod
            .check("rollout", "c1", Reach::Fleet, Some("c1"))
            .is_ok());
        assert!(prod.check("node action", "c1", Reach::Nodes, None).is_ok());
        assert!(Guard::default()
            .check("scale", "c1", Reach::Fleet, None)
            .is_ok());
    }
}
