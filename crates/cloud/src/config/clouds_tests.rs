use super::clouds::*;
use super::ConfigError;
use std::path::{Path, PathBuf};

/// A fake filesystem layout: cwd, XDG config home, one system dir.
struct Layout {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Layout {
    fn new() -> Layout {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        for d in [
            "cwd",
            "xdg/openstack",
            "home/.config/openstack",
            "etc/openstack",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        Layout { _tmp: tmp, root }
    }
    fn env(&self) -> DiscoveryEnv {
        DiscoveryEnv {
            cwd: Some(self.root.join("cwd")),
            xdg_config_home: Some(self.root.join("xdg")),
            home: Some(self.root.join("home")),
            system_dirs: vec![self.root.join("etc/openstack")],
            ..DiscoveryEnv::default()
        }
    }
    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.root.join(rel);
        std::fs::write(&p, text).unwrap();
        p
    }
}

const PROD: &str = r#"
clouds:
  prod:
    auth:
      auth_url: https://keystone.example:5000/v3
      username: ops
      user_domain_name: Default
      project_name: k8s
      project_domain_name: Default
      password: from-clouds-yaml
    region_name: RegionOne
    interface: internal
    cacert: /etc/ssl/prod-ca.pem
    caldera:
      read_only: true
      production: true
      max_events_per_stack: 200
      output_key: kube_minion_ip
"#;

fn cloud(name: &str, marker: &str) -> String {
    format!(
        "  {name}:\n    auth:\n      auth_url: http://{marker}:5000\n      username: u\n      user_domain_id: default\n      project_id: p1\n      password: pw\n"
    )
}

#[test]
fn discovery_order_cwd_then_xdg_then_system() {
    let l = Layout::new();
    let one = |marker: &str| format!("clouds:\n{}", cloud("c", marker));
    l.write("etc/openstack/clouds.yaml", &one("etc"));
    assert_eq!(
        load_cloud(&l.env(), None).unwrap().auth_url,
        "http://etc:5000"
    );
    l.write("xdg/openstack/clouds.yml", &one("xdg"));
    assert_eq!(
        load_cloud(&l.env(), None).unwrap().auth_url,
        "http://xdg:5000"
    );
    l.write("cwd/clouds.json", &one("cwd"));
    assert_eq!(
        load_cloud(&l.env(), None).unwrap().auth_url,
        "http://cwd:5000"
    );
    // OS_CLIENT_CONFIG_FILE beats them all.
    let explicit = l.write("explicit.yaml", &one("explicit"));
    let env = DiscoveryEnv {
        client_config_file: Some(explicit),
        ..l.env()
    };
    assert_eq!(
        load_cloud(&env, None).unwrap().auth_url,
        "http://explicit:5000"
    );
}

#[test]
fn xdg_defaults_to_home_config() {
    let l = Layout::new();
    l.write(
        "home/.config/openstack/clouds.yaml",
        &format!("clouds:\n{}", cloud("c", "home")),
    );
    let env = DiscoveryEnv {
        xdg_config_home: None,
        ..l.env()
    };
    assert_eq!(load_cloud(&env, None).unwrap().auth_url, "http://home:5000");
}

#[test]
fn json_clouds_file_parses() {
    let l = Layout::new();
    l.write(
        "cwd/clouds.json",
        r#"{"clouds": {"j": {"auth_type": "v3applicationcredential", "auth": {"auth_url": "http://k:5000",
            "application_credential_id": "ac1", "application_credential_secret": "s3cr3t"}}}}"#,
    );
    let c = load_cloud(&l.env(), None).unwrap();
    assert_eq!(c.name, "j");
    match &c.credentials {
        Credentials::ApplicationCredential { id, secret, .. } => {
            assert_eq!(id.as_deref(), Some("ac1"));
            assert_eq!(secret.expose(), "s3cr3t");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn full_password_cloud_with_secure_yaml_merged() {
    let l = Layout::new();
    let clouds = l.write("xdg/openstack/clouds.yaml", PROD);
    let secure = l.write(
        "etc/openstack/secure.yaml",
        "clouds:\n  prod:\n    auth:\n      password: from-secure-yaml\n",
    );
    let c = load_cloud(&l.env(), Some("prod")).unwrap();
    assert_eq!(c.source, clouds);
    assert_eq!(c.secure_source.as_ref(), Some(&secure));
    assert_eq!(c.auth_url, "https://keystone.example:5000/v3");
    assert_eq!(c.region_name.as_deref(), Some("RegionOne"));
    assert_eq!(c.interface, "internal");
    assert!(c.verify);
    assert_eq!(c.cacert, Some(PathBuf::from("/etc/ssl/prod-ca.pem")));
    assert_eq!(
        c.caldera,
        CalderaSettings {
            read_only: true,
            production: true,
            max_events_per_stack: Some(200),
            output_key: Some("kube_minion_ip".into()),
        }
    );
    match &c.credentials {
        Credentials::Password {
            user,
            password,
            scope,
        } => {
            assert_eq!(password.expose(), "from-secure-yaml");
            assert_eq!(
                *user,
                UserRef::Name {
                    name: "ops".into(),
                    domain: DomainRef::Name("Default".into())
                }
            );
            assert_eq!(
                *scope,
                Some(ProjectScope::Name {
                    name: "k8s".into(),
                    domain: DomainRef::Name("Default".into())
                })
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(c.secret_files, vec![clouds, secure]);
    // The password never shows in Debug output of the whole config.
    let dbg = format!("{c:?}");
    assert!(
        !dbg.contains("from-secure-yaml") && !dbg.contains("from-clouds-yaml"),
        "{dbg}"
    );
}

#[test]
fn cloud_choice_flag_then_os_cloud_then_single() {
    let l = Layout::new();
    l.write(
        "cwd/clouds.yaml",
        &format!("clouds:\n{}{}", cloud("a", "a"), cloud("b", "b")),
    );
    let err = load_cloud(&l.env(), None).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("several clouds defined (a, b); choose one with --cloud or OS_CLOUD"),
        "{err}"
    );
    let env = DiscoveryEnv {
        os_cloud: Some("b".into()),
        ..l.env()
    };
    assert_eq!(load_cloud(&env, None).unwrap().name, "b");
    assert_eq!(load_cloud(&env, Some("a")).unwrap().name, "a");
}

#[test]
fn error_messages_name_file_cloud_and_key() {
    let l = Layout::new();
    // No file anywhere.
    let err = load_cloud(&l.env(), None).unwrap_err();
    assert!(matches!(err, ConfigError::NotFound { .. }));
    assert!(
        err.to_string()
            .contains("cwd/{clouds.yaml,clouds.yml,clouds.json}"),
        "{err}"
    );

    // OS_CLIENT_CONFIG_FILE pointing nowhere.
    let env = DiscoveryEnv {
        client_config_file: Some(l.root.join("missing.yaml")),
        ..l.env()
    };
    let err = load_cloud(&env, None).unwrap_err().to_string();
    assert!(
        err.contains("missing.yaml") && err.contains("OS_CLIENT_CONFIG_FILE"),
        "{err}"
    );

    let path = l.write(
        "cwd/clouds.yaml",
        "clouds:\n  prod:\n    auth:\n      username: u\n      password: p\n  dev:\n    region_name: x\n",
    );
    let err = load_cloud(&l.env(), Some("staging")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "clouds.yaml {}: cloud 'staging' not found; clouds defined: prod, dev",
            path.display()
        )
    );
    let err = load_cloud(&l.env(), Some("prod")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "clouds.yaml {}: cloud 'prod': auth.auth_url is missing",
            path.display()
        )
    );
}

#[test]
fn missing_pieces_of_auth_are_named() {
    let l = Layout::new();
    let check = |yaml: &str, key: &str| {
        l.write("cwd/clouds.yaml", &format!("clouds:\n  c:\n{yaml}"));
        let err = load_cloud(&l.env(), None).unwrap_err().to_string();
        assert!(err.contains(&format!("cloud 'c': {key} ")), "{err}");
    };
    check("    auth:\n      auth_url: http://k\n      username: u\n      project_id: p\n      user_domain_id: d\n", "auth.password");
    check(
        "    auth:\n      auth_url: http://k\n      password: p\n      project_id: p\n",
        "auth.username",
    );
    check("    auth:\n      auth_url: http://k\n      username: u\n      password: p\n      project_id: p\n", "auth.user_domain_name");
    check(
        "    auth:\n      auth_url: http://k\n      user_id: u\n      password: p\n",
        "auth.project_name",
    );
    check("    auth:\n      auth_url: http://k\n      user_id: u\n      password: p\n      project_name: x\n", "auth.project_domain_name");
    check("    auth_type: v3applicationcredential\n    auth:\n      auth_url: http://k\n      application_credential_id: i\n", "auth.application_credential_secret");
    check("    auth_type: v3applicationcredential\n    auth:\n      auth_url: http://k\n      application_credential_name: n\n      application_credential_secret: s\n", "auth.application_credential_id");
    check(
        "    auth_type: token\n    auth:\n      auth_url: http://k\n",
        "auth_type",
    );
    check("    auth:\n      auth_url: http://k\n      user_id: u\n      password: p\n      project_id: x\n    interface: weird\n", "interface");
    check(
        "    auth:\n      auth_url: http://k\n    verify: sometimes\n",
        "verify",
    );
    check("    auth:\n      auth_url: http://k\n      user_id: u\n      password: p\n      project_id: x\n    caldera:\n      readonly: true\n", "caldera.readonly");
}

#[test]
fn domain_name_is_the_default_for_user_and_project() {
    let l = Layout::new();
    l.write(
        "cwd/clouds.yaml",
        "clouds:\n  c:\n    auth:\n      auth_url: http://k\n      username: u\n      password: p\n      project_name: pr\n      domain_name: corp\n",
    );
    let c = load_cloud(&l.env(), None).unwrap();
    let Credentials::Password { user, scope, .. } = c.credentials else {
        panic!()
    };
    assert_eq!(
        user,
        UserRef::Name {
            name: "u".into(),
            domain: DomainRef::Name("corp".into())
        }
    );
    assert_eq!(
        scope,
        Some(ProjectScope::Name {
            name: "pr".into(),
            domain: DomainRef::Name("corp".into())
        })
    );
}

#[test]
fn yaml_syntax_error_names_file_and_line() {
    let l = Layout::new();
    let path = l.write(
        "cwd/clouds.yaml",
        "clouds:\n  prod:\n    auth:\n      auth_url: http://k\n     bad_indent: [\n",
    );
    let err = load_cloud(&l.env(), None).unwrap_err();
    match &err {
        ConfigError::Syntax { path: p, line, .. } => {
            assert_eq!(p, &path);
            assert_eq!(*line, Some(5));
        }
        other => panic!("{other:?}"),
    }
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!(
            "clouds.yaml {}: syntax error at line 5",
            path.display()
        )),
        "{msg}"
    );
}

#[test]
fn deep_merge_merges_mappings_and_replaces_scalars() {
    let mut base: serde_yaml_ng::Value =
        serde_yaml_ng::from_str("a: {b: 1, c: {d: 2}}\nl: [1, 2]").unwrap();
    let over: serde_yaml_ng::Value =
        serde_yaml_ng::from_str("a: {c: {e: 3}, b: 9}\nl: [3]").unwrap();
    deep_merge(&mut base, over);
    let want: serde_yaml_ng::Value =
        serde_yaml_ng::from_str("a: {b: 9, c: {d: 2, e: 3}}\nl: [3]").unwrap();
    assert_eq!(base, want);
}

#[cfg(unix)]
#[test]
fn password_file_permissions_are_checked() {
    use std::os::unix::fs::PermissionsExt;
    let l = Layout::new();
    let path = l.write("cwd/clouds.yaml", &format!("clouds:\n{}", cloud("c", "k")));
    let set = |p: &Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    set(&path, 0o600);
    assert!(!readable_by_others(&path).unwrap());
    let c = load_cloud(&l.env(), None).unwrap();
    assert!(exposed_secret_files(&c).is_empty());
    set(&path, 0o640);
    assert!(readable_by_others(&path).unwrap());
    set(&path, 0o604);
    assert_eq!(exposed_secret_files(&c), vec![path.clone()]);
}

// ---- issue 13: errors that name file, cloud and key; bounded reads ----

#[test]
fn a_bad_value_names_its_key() {
    let l = Layout::new();
    let path = l.write(
        "cwd/clouds.yaml",
        "clouds:\n  prod:\n    auth:\n      auth_url: 12345\n      user_id: u\n      password: p\n      project_id: x\n",
    );
    let err = load_cloud(&l.env(), None).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "clouds.yaml {}: cloud 'prod': auth.auth_url is invalid: invalid type: integer `12345`, expected a string",
            path.display()
        )
    );
    l.write(
        "cwd/clouds.yaml",
        "clouds:\n  prod:\n    auth:\n      auth_url: http://k\n    verify: sometimes\n",
    );
    let err = load_cloud(&l.env(), None).unwrap_err().to_string();
    assert!(err.contains("cloud 'prod': verify is invalid"), "{err}");
}

#[test]
fn a_bad_value_from_secure_yaml_is_blamed_on_secure_yaml_without_showing_it() {
    let l = Layout::new();
    let clouds = l.write(
        "cwd/clouds.yaml",
        "clouds:\n  prod:\n    auth:\n      auth_url: http://k\n      user_id: u\n      project_id: x\n",
    );
    let secure = l.write(
        "cwd/secure.yaml",
        "clouds:\n  prod:\n    auth:\n      password: 8675309\n",
    );
    let err = load_cloud(&l.env(), None).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "secure.yaml {}: cloud 'prod': auth.password is invalid: must be a string (quote it in YAML); the value is not shown",
            secure.display()
        )
    );
    assert!(!err.contains("8675309"), "the password was printed: {err}");
    assert!(!err.contains(&clouds.display().to_string()), "{err}");

    // The same key bad in clouds.yaml (and not set by secure.yaml) is clouds.yaml's.
    l.write(
        "cwd/clouds.yaml",
        "clouds:\n  prod:\n    region_name: [a]\n    auth:\n      auth_url: http://k\n      user_id: u\n      project_id: x\n",
    );
    l.write(
        "cwd/secure.yaml",
        "clouds:\n  prod:\n    auth:\n      password: fine\n",
    );
    let err = load_cloud(&l.env(), None).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!(
            "clouds.yaml {}: cloud 'prod': region_name is invalid",
            clouds.display()
        )),
        "{err}"
    );
}

#[test]
fn a_directory_or_a_device_as_the_config_file_says_what_it_is() {
    let l = Layout::new();
    let dir = l.root.join("cwd");
    let env = DiscoveryEnv {
        client_config_file: Some(dir.clone()),
        ..l.env()
    };
    let err = load_cloud(&env, None).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "clouds.yaml {}: OS_CLIENT_CONFIG_FILE names a path that is a directory, not a file",
            dir.display()
        )
    );
    #[cfg(unix)]
    {
        let env = DiscoveryEnv {
            client_config_file: Some(PathBuf::from("/dev/zero")),
            ..l.env()
        };
        let err = load_cloud(&env, None).unwrap_err().to_string();
        assert_eq!(
            err,
            "clouds.yaml /dev/zero: OS_CLIENT_CONFIG_FILE names a path that is a character device, not a file"
        );
        let env = DiscoveryEnv {
            client_secure_file: Some(PathBuf::from("/dev/zero")),
            ..l.env()
        };
        l.write("cwd/clouds.yaml", &format!("clouds:\n{}", cloud("c", "k")));
        let err = load_cloud(&env, None).unwrap_err().to_string();
        assert_eq!(
            err,
            "secure.yaml /dev/zero: OS_CLIENT_SECURE_FILE names a path that is a character device, not a file"
        );
    }
}

#[test]
fn an_oversized_clouds_yaml_is_refused_without_reading_it_whole() {
    let l = Layout::new();
    let path = l.write("cwd/clouds.yaml", &format!("clouds:\n{}", cloud("c", "k")));
    // A sparse 3 GB file: reading it whole would take the memory the limit protects.
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(3 << 30).unwrap();
    let err = load_cloud(&l.env(), None).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "clouds.yaml {}: is larger than the 1 MiB limit",
            path.display()
        )
    );
}

#[test]
fn deeply_nested_yaml_is_refused_before_parsing() {
    let l = Layout::new();
    // 200 KB of `[`: libyaml needs tens of seconds for it (quadratic in the depth).
    let path = l.write(
        "cwd/clouds.yaml",
        &format!("clouds:\n  c: {}\n", "[".repeat(200_000)),
    );
    let err = load_cloud(&l.env(), None).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "clouds.yaml {}: nests deeper than 64 levels (at line 2); refusing to parse it",
            path.display()
        )
    );
    let secure = l.write("cwd/secure.yaml", &"{a: ".repeat(1000));
    l.write("cwd/clouds.yaml", &format!("clouds:\n{}", cloud("c", "k")));
    let err = load_cloud(&l.env(), None).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("secure.yaml {}: nests deeper", secure.display())),
        "{err}"
    );
}
