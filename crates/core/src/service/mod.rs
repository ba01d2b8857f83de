//! The read/act seam between the I/O layer and its users (console, headless commands).
//!
//! The console's workers hold an `Arc<dyn CloudService>` and never see HTTP. A real cloud
//! (Keystone + Heat + Magnum + Nova), a no-auth standalone Heat and the built-in simulator
//! are all served by implementations of this trait; tests use in-memory fakes.

pub mod fleet_scan;
pub mod heat_native_rows;
pub mod live;
pub mod live_operator;
pub mod operator;
pub mod plain_stack;
pub mod resource_show;
pub mod stack_overview;
pub mod watch;
pub mod watch_capi;

use crate::model::{
    Cluster, NodeAddress, NodeGroup, ServerDetail, ServerTarget, StackEvent, StackRef,
    StackResource, StackSummary,
};
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::FutureExt;

pub use caldera_cloud::health;
pub use caldera_cloud::report::{BudgetStats, CloudInfo, ErrorKind, ServiceError, ServiceResult};
pub use resource_show::ResourceDetail;
pub use stack_overview::StackOverview;

/// A stack's resources as the tree read lists them, with the members held on a hook whose
/// pause events Heat purged ([`crate::ops::hooks::inferred_tree_holds`]): the events the
/// console follows cannot show those.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StackTree {
    pub resources: Vec<StackResource>,
    pub inferred_holds: Vec<crate::ops::hooks::PendingHook>,
    /// `pre-update` hooks the stack's environment keeps with no update running: they would
    /// hold the members they name in the stack's next update ([`crate::drivers::leftover_hooks`]).
    pub leftover_hooks: Vec<crate::drivers::leftover_hooks::LeftoverHook>,
}

/// One step of a streamed node fetch.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeUpdate {
    /// The member list is known: `total` members (statuses filled, IPs maybe not yet).
    Members(Vec<crate::model::Node>),
    /// The member list, sent before the images are known (a `Members` with them follows
    /// before `Done`, when there are any): a view keeps the images it knew meanwhile, and
    /// the hook marks too unless `marks` says these carry them, rather than showing every
    /// node off its hook and of no image for a moment.
    Listed {
        nodes: Vec<crate::model::Node>,
        marks: bool,
    },
    /// Addresses for one member arrived (with its server name when the source knew it).
    Address(NodeAddress),
    /// A member's server name arrived after its address.
    Named { member: String, name: String },
    /// One member's address lookup failed; the rest keep coming.
    AddressFailed { member: String, error: ServiceError },
    /// Every member has been tried.
    Done,
}

/// Where an event follower is; opaque to callers, passed back on each poll.
#[derive(Debug, Clone, Default)]
pub struct EventCursor {
    pub(crate) tracker: crate::ops::event_tracker::EventTracker,
}

impl EventCursor {
    /// Events delivered through this cursor so far.
    /// Takes a page of events (as Heat gave it, oldest first) and returns the ones not
    /// delivered before, in order; for services that read events themselves.
    pub fn ingest(&mut self, page: Vec<StackEvent>) -> Vec<StackEvent> {
        self.tracker.ingest(page)
    }
    pub fn delivered(&self) -> u64 {
        self.tracker.delivered()
    }
    /// Duplicates the server sent again and the cursor dropped.
    pub fn duplicates_dropped(&self) -> u64 {
        self.tracker.duplicates_dropped()
    }
    /// Whether an event id went through this cursor (within its memory bound).
    pub fn has_seen(&self, id: &str) -> bool {
        self.tracker.has_seen(id)
    }
    /// Ids the cursor remembers for de-duplication (bounded).
    pub fn remembered(&self) -> usize {
        self.tracker.remembered()
    }
    /// The cloud's `max_events_per_stack` when known (Heat's default 1000 is assumed): the
    /// follower polls fast enough not to lose events Heat purges.
    pub fn with_retention(mut self, max_events_per_stack: usize) -> Self {
        self.tracker.set_retention(max_events_per_stack);
        self
    }
    /// Whether the retention was given (else the cloud's `caldera:` setting, or Heat's
    /// default, applies).
    pub fn retention_known(&self) -> bool {
        self.tracker.retention_known()
    }
    /// The `max_events_per_stack` the follower paces itself against.
    pub fn retention(&self) -> usize {
        self.tracker.retention()
    }
    /// When to poll next, at most `configured` after this poll: sooner while a stack writes
    /// events fast enough to outrun Heat's retention, backing off to `configured` when quiet.
    pub fn next_delay(&self, configured: std::time::Duration) -> std::time::Duration {
        self.tracker.next_delay(configured)
    }
}

/// One output of a stack as Heat lists it (`GET /stacks/{name}/{id}/outputs`): its key and
/// description. Listing evaluates nothing, so it is cheap even on a large stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackOutput {
    pub key: String,
    pub description: Option<String>,
}

/// One output evaluated (`GET .../outputs/{key}`): Heat resolves its `get_attr`s, which on a
/// large stack can take seconds. The value is text (a string as it is, anything else as
/// JSON), so no JSON value reaches the console; `error` is Heat's reason it could not
/// resolve (an attribute of a failed resource, say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedOutput {
    pub key: String,
    pub value: String,
    pub error: Option<String>,
}

/// Everything the console reads from a cloud. Implementations own all I/O.
pub trait CloudService: Send + Sync + 'static {
    fn info(&self) -> CloudInfo;
    fn budget(&self) -> BudgetStats;

    fn list_clusters(&self) -> BoxFuture<'static, ServiceResult<Vec<Cluster>>>;
    fn list_nodegroups(
        &self,
        cluster: Cluster,
    ) -> BoxFuture<'static, ServiceResult<Vec<NodeGroup>>>;
    fn list_stacks(&self) -> BoxFuture<'static, ServiceResult<Vec<StackSummary>>>;

    /// One cluster read again, as the clusters list would show it (status, counts, the NGS
    /// column), for the price of that one cluster: the list costs requests per cluster, so a
    /// console that only needs to follow one cluster (an action settling on it) reads this.
    fn cluster(&self, cluster: Cluster) -> BoxFuture<'static, ServiceResult<Cluster>> {
        unsupported(format!(
            "cluster {} cannot be read alone here",
            cluster.name
        ))
    }

    /// Members of a node group with statuses, then their addresses as they are found.
    fn stream_nodes(&self, nodegroup: NodeGroup) -> BoxStream<'static, ServiceResult<NodeUpdate>>;

    /// Resources of a stack down to `nested_depth`.
    fn stack_resources(
        &self,
        stack: StackRef,
        nested_depth: u32,
    ) -> BoxFuture<'static, ServiceResult<Vec<StackResource>>>;

    /// Resources of a stack down to `nested_depth`, with the holds on hooks that only an
    /// inference finds (pause events purged by Heat): what the console's tree assesses.
    /// Without the inference here, no such hold.
    fn stack_tree(
        &self,
        stack: StackRef,
        nested_depth: u32,
    ) -> BoxFuture<'static, ServiceResult<StackTree>> {
        self.stack_resources(stack, nested_depth)
            .map(|r| {
                r.map(|resources| StackTree {
                    resources,
                    inferred_holds: vec![],
                    leftover_hooks: vec![],
                })
            })
            .boxed()
    }

    /// New events since `cursor`, oldest first, without duplicates; returns the advanced cursor.
    fn poll_events(
        &self,
        stack: StackRef,
        nested_depth: u32,
        cursor: EventCursor,
    ) -> BoxFuture<'static, ServiceResult<(Vec<StackEvent>, EventCursor)>>;

    /// The outputs a stack declares (keys and descriptions, nothing evaluated).
    fn stack_outputs(
        &self,
        stack: StackRef,
    ) -> BoxFuture<'static, ServiceResult<Vec<StackOutput>>> {
        unsupported(format!(
            "the outputs of {} cannot be listed here",
            stack.name
        ))
    }

    /// One output of a stack, evaluated by Heat (may be slow).
    fn stack_output(
        &self,
        stack: StackRef,
        key: String,
    ) -> BoxFuture<'static, ServiceResult<ResolvedOutput>> {
        unsupported(format!(
            "output {key} of {} cannot be shown here",
            stack.name
        ))
    }

    /// One resource of `stack` (the stack that owns it): `resource show` with its
    /// attributes, its metadata and its latest events.
    fn resource_detail(
        &self,
        stack: StackRef,
        resource: String,
    ) -> BoxFuture<'static, ServiceResult<ResourceDetail>> {
        unsupported(format!(
            "resource {resource} of {} cannot be shown here",
            stack.name
        ))
    }

    /// One stack whole: `stack show` (outputs not resolved), its outputs list, its template.
    fn stack_overview(&self, stack: StackRef) -> BoxFuture<'static, ServiceResult<StackOverview>> {
        unsupported(format!("stack {} cannot be shown here", stack.name))
    }

    /// A stack known by its id alone (a nested stack: a group's, which the stack list does
    /// not show), with the name Heat's URLs want beside it.
    fn resolve_stack(&self, id: String) -> BoxFuture<'static, ServiceResult<StackRef>> {
        unsupported(format!("stack {id} cannot be looked up here"))
    }

    /// One node's Nova server (`server show`) with the tail of its console log. A cloud
    /// without Nova says so.
    fn server_detail(
        &self,
        target: ServerTarget,
    ) -> BoxFuture<'static, ServiceResult<ServerDetail>> {
        let name = target.name;
        async move {
            Err(ServiceError::new(
                ErrorKind::Unsupported,
                format!("no Nova here: the server of {name} cannot be shown"),
            ))
        }
        .boxed()
    }
}

/// The answer of a service that cannot do what was asked.
fn unsupported<T: Send + 'static>(message: String) -> BoxFuture<'static, ServiceResult<T>> {
    async move { Err(ServiceError::new(ErrorKind::Unsupported, message)) }.boxed()
}
