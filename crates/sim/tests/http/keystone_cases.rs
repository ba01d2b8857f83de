use crate::common::{fast, password_token, Api};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::time::Duration;

#[tokio::test]
async fn discovery_and_password_auth_with_catalog() {
    let api = Api::start(fast("empty")).await;
    let base = api.h.base_url();
    let r = api
        .http
        .get(format!("{base}/identity"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::MULTIPLE_CHOICES);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["versions"]["values"][0]["id"], "v3.14");
    let r = api.http.get(&api.h.auth_url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["version"]["links"][0]["href"],
        format!("{}/", api.h.auth_url)
    );

    let r = password_token(&api.http, &api.h).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    assert!(r.headers().contains_key("x-subject-token"));
    let v: Value = r.json().await.unwrap();
    let tok = &v["token"];
    assert!(tok["expires_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(tok["project"]["id"], api.h.project_id);
    assert_eq!(tok["methods"][0], "password");
    let cat = tok["catalog"].as_array().unwrap();
    let url = |ty: &str| {
        let svc = cat.iter().find(|s| s["type"] == ty).unwrap();
        let eps = svc["endpoints"].as_array().unwrap();
        assert_eq!(eps.len(), 3);
        assert!(eps.iter().all(|e| e["region_id"] == "RegionOne"));
        eps.iter().find(|e| e["interface"] == "public").unwrap()["url"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(url("orchestration"), api.h.heat_url());
    assert_eq!(url("container-infra"), api.h.magnum_url());
    assert_eq!(url("compute"), api.h.nova_url());
    api.h.shutdown().await;
}

#[tokio::test]
async fn wrong_credentials_and_missing_token_are_401() {
    let api = Api::start(fast("empty")).await;
    let body = json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {"name": api.h.username, "domain": {"name": "Default"}, "password": "wrong"}}}}});
    let r = api
        .http
        .post(format!("{}/auth/tokens", api.h.auth_url))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    // Like the real Keystone (tests/real_keystone/basics.rs met it): the header points at v3.
    assert_eq!(
        r.headers()["www-authenticate"],
        format!("Keystone uri=\"{}\"", api.h.auth_url).as_str()
    );
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], 401);
    assert_eq!(v["error"]["title"], "Unauthorized");

    let r = api
        .http
        .get(format!("{}/stacks", api.h.heat_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = api
        .http
        .get(format!("{}/stacks", api.h.heat_url()))
        .header("X-Auth-Token", "bogus")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.headers().contains_key("www-authenticate"));
    api.h.shutdown().await;
}

#[tokio::test]
async fn application_credentials_and_validation() {
    let api = Api::start(fast("empty")).await;
    let body = json!({"auth": {"identity": {"methods": ["application_credential"], "application_credential": {"id": api.h.application_credential_id, "secret": api.h.application_credential_secret}}}});
    let r = api
        .http
        .post(format!("{}/auth/tokens", api.h.auth_url))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let tok = r.headers()["x-subject-token"].to_str().unwrap().to_string();
    let r = api
        .http
        .get(format!("{}/auth/tokens", api.h.auth_url))
        .header("X-Auth-Token", &api.token)
        .header("X-Subject-Token", &tok)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["token"]["methods"][0], "application_credential");
    assert!(v["token"]["catalog"].is_array());

    // The real Keystone looks a credential up by name only within its user: a name alone is
    // a 400, not a token.
    let body = json!({"auth": {"identity": {"methods": ["application_credential"], "application_credential": {"name": "caldera-sim", "secret": api.h.application_credential_secret}}}});
    let r = api
        .http
        .post(format!("{}/auth/tokens", api.h.auth_url))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    api.h.shutdown().await;
}

#[tokio::test]
async fn tokens_expire() {
    let mut opts = fast("empty");
    opts.token_ttl = Duration::from_millis(600);
    let api = Api::start(opts).await;
    assert_eq!(api.get(&api.heat("/stacks")).await.status, StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        api.get(&api.heat("/stacks")).await.status,
        StatusCode::UNAUTHORIZED
    );
    api.h.shutdown().await;
}

/// What the real Keystone 30 answers (met in the real-Keystone suite, scripts/
/// keystone-standalone.sh): a user or a project given by name without its domain is a 400
/// "Expecting to find domain in ...", not a refused login; an application credential id
/// that does not exist is a 404 naming it.
#[tokio::test]
async fn malformed_logins_are_answered_like_keystone() {
    let api = Api::start(fast("empty")).await;
    let h = &api.h;
    let user =
        json!({"name": h.username, "domain": {"name": h.user_domain_name}, "password": h.password});
    let project = json!({"name": h.project_name, "domain": {"name": h.project_domain_name}});
    let mut no_user_domain = user.clone();
    no_user_domain.as_object_mut().unwrap().remove("domain");
    let mut no_project_domain = project.clone();
    no_project_domain.as_object_mut().unwrap().remove("domain");
    let password = |user: &Value, project: &Value| {
        json!({"auth": {"identity": {"methods": ["password"], "password": {"user": user}},
                        "scope": {"project": project}}})
    };
    let cases = [
        (
            password(&no_user_domain, &project),
            StatusCode::BAD_REQUEST,
            "Expecting to find domain in user.",
        ),
        (
            password(&user, &no_project_domain),
            StatusCode::BAD_REQUEST,
            "Expecting to find domain in project.",
        ),
        (
            json!({"auth": {"identity": {"methods": ["application_credential"], "application_credential": {"id": "0123456789abcdef0123456789abcdef", "secret": "x"}}}}),
            StatusCode::NOT_FOUND,
            "Could not find Application Credential: 0123456789abcdef0123456789abcdef.",
        ),
        // Still a 401: the right credential id with a wrong secret, a known user in an
        // unknown domain.
        (
            json!({"auth": {"identity": {"methods": ["application_credential"], "application_credential": {"id": h.application_credential_id, "secret": "wrong"}}}}),
            StatusCode::UNAUTHORIZED,
            "The request you have made requires authentication.",
        ),
        (
            password(
                &json!({"name": h.username, "domain": {"name": "nope"}, "password": h.password}),
                &project,
            ),
            StatusCode::UNAUTHORIZED,
            "The request you have made requires authentication.",
        ),
    ];
    for (body, status, message) in cases {
        let r = api
            .http
            .post(format!("{}/auth/tokens", h.auth_url))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), status, "{body}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], status.as_u16(), "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .starts_with(message),
            "{v}"
        );
    }
    // Given properly, the same user and project log in.
    let r = password_token(&api.http, h).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    api.h.shutdown().await;
}
