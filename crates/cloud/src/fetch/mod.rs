//! The fetcher every list goes through: the shared request budget, retry policy, pagination
//! and bounded fan-out. The HTTP transport (`api::http`) applies budget and retries to every
//! request, so paginated and fanned-out requests are budgeted too.

pub mod budget;
pub mod fanout;
pub mod paginate;
pub mod retry;
pub mod task;

pub use budget::{BudgetConfig, BudgetPermit, RequestBudget};
pub use fanout::fan_out;
pub use paginate::{paginate, Page};
pub use retry::RetryPolicy;
pub use task::{spawn_stream, AbortOnDrop};
