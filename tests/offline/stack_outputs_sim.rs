//! The stack outputs view's two calls over the in-process simulator, through the live
//! service the console uses: listing a stack's outputs evaluates nothing (keys and
//! descriptions), and evaluating one gives its value as text (no JSON value reaches the
//! console).

use crate::support::sim_group;
use caldera::service::live::LiveService;
use caldera::service::CloudService;
use caldera::sim::SimOptions;

#[tokio::test]
async fn outputs_are_listed_then_one_is_evaluated_as_text() {
    let (_sim, conn) = sim_group::connected(SimOptions::fast("demo", 1.0)).await;
    let service = LiveService::new(conn);
    let stacks = service.list_stacks().await.expect("stacks");
    let mut found = None;
    for s in stacks {
        let outputs = service
            .stack_outputs(s.stack.clone())
            .await
            .expect("outputs listed");
        if let Some(first) = outputs.into_iter().next() {
            found = Some((s.stack, first));
            break;
        }
    }
    let (stack, output) = found.expect("a demo stack with outputs");
    assert!(!output.key.is_empty());
    let value = service
        .stack_output(stack.clone(), output.key.clone())
        .await
        .expect("output evaluated");
    assert_eq!(value.key, output.key);
    assert!(value.error.is_none(), "{value:?}");
    // A missing key is Heat's 404, said as an error, not a panic or an empty value.
    let missing = service
        .stack_output(stack, "no-such-output".into())
        .await
        .expect_err("no such output");
    assert!(!missing.message.is_empty());
}
