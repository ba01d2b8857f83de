//! Nova names a server's image by id only; operators, templates and most cluster templates
//! name images by name (`image: fedora-40`, Magnum's `image_id: fedora-coreos-40`; Heat and
//! Magnum accept either). Comparing the two says every node is on an "old" image. So a
//! server's image id is said the way the node group's own image is: by name when that is a
//! name (or when the group has none: a plain stack, where names are for the operator's eyes),
//! left as an id when the group's image is an id.

use crate::api::nova::NovaClient;
use crate::model::looks_like_uuid;
use std::collections::{BTreeSet, HashMap};

/// Rewrites each image id in `images` as its name (Nova's image proxy, remembered by the
/// client) unless `target`, the group's own image, is an id. A name Nova cannot give
/// leaves the id.
pub async fn as_target_says<'a>(
    nova: &NovaClient,
    target: Option<&str>,
    images: impl IntoIterator<Item = &'a mut String>,
) {
    if target.is_some_and(looks_like_uuid) {
        return;
    }
    let mut images: Vec<&'a mut String> =
        images.into_iter().filter(|i| looks_like_uuid(i)).collect();
    let ids: BTreeSet<String> = images.iter().map(|i| i.to_string()).collect();
    let asked = futures::future::join_all(ids.into_iter().map(|id| async move {
        let name = nova.image_name(&id).await;
        (id, name)
    }))
    .await;
    let mut names = HashMap::new();
    for (id, name) in asked {
        match name {
            Ok(Some(name)) => {
                names.insert(id, name);
            }
            Ok(None) => {}
            Err(e) => tracing::info!("image {id}: name not read: {e}"),
        }
    }
    for image in images.iter_mut() {
        if let Some(name) = names.get(image.as_str()) {
            **image = name.clone();
        }
    }
}
