//! From what an operator names (a `CLUSTER/NODEGROUP` argument, or a row of the console) to a
//! resolved [`NodeGroupTarget`] and the driver that acts on it. The headless commands and the
//! console's operator share this, so both find the same node group the same way.

use super::heat_native::HeatNativeDriver;
use super::magnum::MagnumDriver;
use super::{unsupported, Driver, NodeGroupTarget};
use crate::api::cloud::CloudConnection;
use crate::model::DriverKind;
use crate::report::{ErrorKind, ServiceError, ServiceResult};
use crate::templates::Machines;

/// The drivers a connection offers: Heat-native always (every cloud has Heat), Magnum where
/// the cloud has a Magnum endpoint.
#[derive(Clone)]
pub struct Drivers {
    heat_native: HeatNativeDriver,
    magnum: Option<MagnumDriver>,
}

impl Drivers {
    /// Test machines on the simulator (it has no real servers to boot), Nova servers elsewhere.
    pub fn new(conn: &CloudConnection) -> Drivers {
        let machines = if conn.info().is_simulator {
            Machines::Test
        } else {
            Machines::Nova
        };
        Drivers {
            heat_native: HeatNativeDriver::new(conn.heat.clone(), machines),
            magnum: conn.magnum.clone().map(|m| {
                MagnumDriver::new(m, Some(conn.heat.clone())).with_nova(conn.nova.clone())
            }),
        }
    }

    pub fn heat_native(&self) -> &HeatNativeDriver {
        &self.heat_native
    }

    /// The Magnum driver, or an Unsupported error on a cloud without Magnum.
    pub fn magnum(&self) -> ServiceResult<&MagnumDriver> {
        self.magnum
            .as_ref()
            .ok_or_else(|| unsupported("this cloud has no Magnum endpoint"))
    }

    pub fn of(&self, kind: DriverKind) -> ServiceResult<&dyn Driver> {
        match kind {
            DriverKind::HeatNative => Ok(&self.heat_native),
            DriverKind::Magnum => Ok(self.magnum()?),
        }
    }

    /// `nodegroup` of `cluster` through the driver of `kind` (the console knows the kind).
    pub async fn find(
        &self,
        kind: DriverKind,
        cluster: &str,
        nodegroup: &str,
    ) -> ServiceResult<(NodeGroupTarget, &dyn Driver)> {
        let driver = self.of(kind)?;
        Ok((driver.find_nodegroup(cluster, nodegroup).await?, driver))
    }

    /// `CLUSTER/NODEGROUP`, or `CLUSTER` with a single node group: Heat-native first (by
    /// tags), then Magnum. A name neither knows is NotFound; a cluster with several node
    /// groups and no node group named is a Config error that lists them.
    pub async fn resolve(&self, target: &str) -> ServiceResult<(NodeGroupTarget, &dyn Driver)> {
        let (cluster, nodegroup) = match target.split_once('/') {
            Some((c, n)) => (c, Some(n)),
            None => (target, None),
        };
        let mut drivers: Vec<&dyn Driver> = vec![&self.heat_native];
        if let Some(m) = &self.magnum {
            drivers.push(m);
        }
        let not_found = ServiceError::new(
            ErrorKind::NotFound,
            format!("no node group '{target}' (Heat-native or Magnum)"),
        );
        let mut last = not_found.clone();
        for d in drivers {
            let found = match nodegroup {
                Some(ng) => d.find_nodegroup(cluster, ng).await,
                None => match d.list_nodegroups(cluster).await {
                    Ok(groups) if groups.len() == 1 => {
                        d.find_nodegroup(cluster, &groups[0].nodegroup).await
                    }
                    Ok(groups) if groups.is_empty() => Err(not_found.clone()),
                    Ok(groups) => Err(ServiceError::new(
                        ErrorKind::Config,
                        format!(
                            "cluster {cluster} has {} node groups ({}): say CLUSTER/NODEGROUP",
                            groups.len(),
                            groups
                                .iter()
                                .map(|g| g.nodegroup.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    )),
                    Err(e) => Err(e),
                },
            };
            match found {
                Ok(t) => return Ok((t, d)),
                Err(e) if e.kind == ErrorKind::NotFound => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }
}
