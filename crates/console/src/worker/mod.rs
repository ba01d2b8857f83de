//! Background workers: every request runs as its own task through the
//! `CloudService`; answers go back on one channel tagged with their generation.
//! Node streams can be cancelled; stack names are resolved (and cached) here.
//! The operator's actions and the rollouts they start are in `operator_jobs`.

mod operator_jobs;

use super::message::{Reply, Request, StackTarget};
use crate::model::StackRef;
use crate::service::operator::Operator;
use crate::service::{CloudService, ErrorKind, ServiceError};
use futures::StreamExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

pub struct Worker {
    service: Arc<dyn CloudService>,
    /// Does the actions; `None` for a read-only console.
    operator: Option<Arc<dyn Operator>>,
    tx: UnboundedSender<Reply>,
    node_streams: HashMap<String, CancellationToken>,
    stack_names: Arc<Mutex<HashMap<String, StackRef>>>,
    /// The rollouts this console drives, by node-group id.
    rollouts: operator_jobs::Rollouts,
    shutdown: CancellationToken,
    /// Every cloud of clouds.yaml, for the fleet view.
    fleet: Option<crate::service::fleet_scan::SharedFleet>,
}

/// Find a stack's name (Heat URLs want `name/id`), from the cache or the stack list.
async fn resolve(
    service: &Arc<dyn CloudService>,
    cache: &Arc<Mutex<HashMap<String, StackRef>>>,
    target: StackTarget,
) -> StackRef {
    if let Some(name) = target.name {
        return StackRef {
            name,
            id: target.id,
        };
    }
    if let Some(r) = cache.lock().ok().and_then(|c| c.get(&target.id).cloned()) {
        return r;
    }
    if let Ok(stacks) = service.list_stacks().await {
        if let Ok(mut c) = cache.lock() {
            for s in stacks {
                c.insert(s.stack.id.clone(), s.stack);
            }
        }
    }
    if let Some(r) = cache.lock().ok().and_then(|c| c.get(&target.id).cloned()) {
        return r;
    }
    // Not in the list (a group's nested stack): Heat names it (`GET /stacks/{id}`).
    match service.resolve_stack(target.id.clone()).await {
        Ok(r) => {
            if let Ok(mut c) = cache.lock() {
                c.insert(r.id.clone(), r.clone());
            }
            r
        }
        Err(e) => {
            tracing::info!("stack {}: {e}", target.id);
            StackRef {
                name: target.id.clone(),
                id: target.id,
            }
        }
    }
}

impl Worker {
    pub fn new(service: Arc<dyn CloudService>, tx: UnboundedSender<Reply>) -> Worker {
        Worker {
            service,
            operator: None,
            tx,
            node_streams: HashMap::new(),
            stack_names: Arc::new(Mutex::new(HashMap::new())),
            rollouts: operator_jobs::Rollouts::default(),
            shutdown: CancellationToken::new(),
            fleet: None,
        }
    }

    /// Gives the worker the operator that carries out actions.
    pub fn with_operator(mut self, operator: Option<Arc<dyn Operator>>) -> Worker {
        self.operator = operator;
        self
    }

    /// Gives the worker the clouds the fleet view asks.
    pub fn with_fleet(mut self, fleet: Option<crate::service::fleet_scan::SharedFleet>) -> Worker {
        self.fleet = fleet;
        self
    }

    /// Each cloud's answer as it comes, then the end. Without a fleet source, the end says
    /// why at once.
    fn scan_fleet(&self, gen: u64) {
        let tx = self.tx.clone();
        let Some(fleet) = self.fleet.clone() else {
            let result = Err(ServiceError::new(
                ErrorKind::Config,
                "no clouds.yaml: the fleet lists the clouds it defines",
            ));
            let _ = tx.send(Reply::FleetDone { gen, result });
            return;
        };
        self.spawn(async move {
            let mut answers = fleet.scan();
            while let Some(report) = answers.next().await {
                if tx.send(Reply::FleetCloud { gen, report }).is_err() {
                    return;
                }
            }
            let _ = tx.send(Reply::FleetDone {
                gen,
                result: Ok(()),
            });
        });
    }

    /// Puts the worker on another cloud (`:cloud`): everything under way on the old one
    /// (node streams, lookups, rollouts driven here) is stopped, its stack names forgotten,
    /// and every request from now on goes to `service`.
    pub fn replace(&mut self, service: Arc<dyn CloudService>, operator: Option<Arc<dyn Operator>>) {
        self.shutdown.cancel();
        self.shutdown = CancellationToken::new();
        for (_, stream) in self.node_streams.drain() {
            stream.cancel();
        }
        self.stack_names = Arc::new(Mutex::new(HashMap::new()));
        self.rollouts = operator_jobs::Rollouts::default();
        self.service = service;
        self.operator = operator;
    }

    /// Stop everything (on quit).
    pub fn shutdown(&self) {
        self.shutdown.cancel();
    }

    fn spawn<F>(&self, fut: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let stop = self.shutdown.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = fut => {}
            }
        });
    }

    pub fn submit(&mut self, req: Request) {
        let svc = self.service.clone();
        let tx = self.tx.clone();
        tracing::debug!(?req, "request");
        match req {
            Request::Clusters { gen } => self.spawn(async move {
                let result = svc.list_clusters().await;
                let _ = tx.send(Reply::Clusters { gen, result });
            }),
            Request::Cluster { cluster, gen } => self.spawn(async move {
                let cluster_id = cluster.id.clone();
                let result = svc.cluster(cluster).await;
                let _ = tx.send(Reply::Cluster {
                    cluster_id,
                    gen,
                    result,
                });
            }),
            Request::Stacks { gen } => {
                let cache = self.stack_names.clone();
                self.spawn(async move {
                    let result = svc.list_stacks().await;
                    if let (Ok(stacks), Ok(mut c)) = (&result, cache.lock()) {
                        for s in stacks {
                            c.insert(s.stack.id.clone(), s.stack.clone());
                        }
                    }
                    let _ = tx.send(Reply::Stacks { gen, result });
                })
            }
            Request::NodeGroups { cluster, gen } => self.spawn(async move {
                let cluster_id = cluster.id.clone();
                let result = svc.list_nodegroups(cluster).await;
                let _ = tx.send(Reply::NodeGroups {
                    cluster_id,
                    gen,
                    result,
                });
            }),
            Request::Nodes { nodegroup, gen } => {
                let id = nodegroup.id.clone();
                if let Some(old) = self.node_streams.remove(&id) {
                    old.cancel();
                }
                let token = CancellationToken::new();
                self.node_streams.insert(id.clone(), token.clone());
                self.spawn(async move {
                    let mut stream = svc.stream_nodes(nodegroup);
                    loop {
                        tokio::select! {
                            _ = token.cancelled() => break,
                            item = stream.next() => match item {
                                Some(update) => {
                                    if tx.send(Reply::Nodes { nodegroup_id: id.clone(), gen, update }).is_err() {
                                        break;
                                    }
                                }
                                None => break,
                            }
                        }
                    }
                    let _ = tx.send(Reply::NodesEnded { nodegroup_id: id, gen });
                });
            }
            Request::StopNodes { nodegroup_id } => {
                if let Some(t) = self.node_streams.remove(&nodegroup_id) {
                    t.cancel();
                }
            }
            Request::Events { stack, cursor, gen } => {
                let cache = self.stack_names.clone();
                self.spawn(async move {
                    let stack_id = stack.id.clone();
                    let sref = resolve(&svc, &cache, stack).await;
                    let stack_name = (sref.name != sref.id).then(|| sref.name.clone());
                    let result = svc.poll_events(sref, 5, cursor).await;
                    let _ = tx.send(Reply::Events {
                        stack_id,
                        stack_name,
                        gen,
                        result,
                    });
                })
            }
            Request::Tree { stack, depth, gen } => {
                let cache = self.stack_names.clone();
                self.spawn(async move {
                    let stack_id = stack.id.clone();
                    let sref = resolve(&svc, &cache, stack).await;
                    let stack_name = (sref.name != sref.id).then(|| sref.name.clone());
                    let result = svc.stack_tree(sref, depth).await;
                    let _ = tx.send(Reply::Tree {
                        stack_id,
                        stack_name,
                        gen,
                        result,
                    });
                })
            }
            Request::Server { target, gen } => self.spawn(async move {
                let key = target.key.clone();
                let result = svc.server_detail(target).await;
                let _ = tx.send(Reply::Server { key, gen, result });
            }),
            Request::Outputs { stack, gen } => {
                let cache = self.stack_names.clone();
                self.spawn(async move {
                    let stack_id = stack.id.clone();
                    let sref = resolve(&svc, &cache, stack).await;
                    let stack_name = (sref.name != sref.id).then(|| sref.name.clone());
                    let result = svc.stack_outputs(sref).await;
                    let _ = tx.send(Reply::Outputs {
                        stack_id,
                        stack_name,
                        gen,
                        result,
                    });
                })
            }
            Request::Output { stack, key, gen } => {
                let cache = self.stack_names.clone();
                self.spawn(async move {
                    let stack_id = stack.id.clone();
                    let sref = resolve(&svc, &cache, stack).await;
                    let result = svc.stack_output(sref, key.clone()).await;
                    let _ = tx.send(Reply::Output {
                        stack_id,
                        key,
                        gen,
                        result,
                    });
                })
            }
            Request::Stack { stack, gen } => {
                let cache = self.stack_names.clone();
                self.spawn(async move {
                    let stack_id = stack.id.clone();
                    let sref = resolve(&svc, &cache, stack).await;
                    let result = svc.stack_overview(sref).await;
                    let _ = tx.send(Reply::Stack {
                        stack_id,
                        gen,
                        result,
                    });
                })
            }
            Request::Resource {
                stack,
                resource,
                gen,
            } => {
                let cache = self.stack_names.clone();
                self.spawn(async move {
                    let stack_id = stack.id.clone();
                    let sref = resolve(&svc, &cache, stack).await;
                    let result = svc.resource_detail(sref, resource.clone()).await;
                    let _ = tx.send(Reply::Resource {
                        stack_id,
                        resource,
                        gen,
                        result,
                    });
                })
            }
            Request::Save { path, contents } => self.spawn(async move {
                let lines = contents.lines().count();
                let result = tokio::fs::write(&path, contents)
                    .await
                    .map(|_| lines)
                    .map_err(|e| e.to_string());
                let _ = tx.send(Reply::Saved { path, result });
            }),
            Request::Fleet { gen } => self.scan_fleet(gen),
            Request::ListClouds => self.spawn(async move {
                let read = tokio::task::spawn_blocking(|| {
                    let env = caldera_cloud::config::DiscoveryEnv::from_process();
                    caldera_cloud::config::clouds::list_clouds(&env).map_err(|e| e.to_string())
                })
                .await;
                let result = read.unwrap_or_else(|e| Err(format!("reading clouds.yaml: {e}")));
                let _ = tx.send(Reply::Clouds { result });
            }),
            // Connecting is the runtime's (it owns the worker it replaces).
            Request::SwitchCloud { name, .. } => {
                tracing::warn!("switching to cloud {name} reached the worker: ignored");
            }
            Request::Operator(r) => self.submit_action(r),
        }
    }
}
