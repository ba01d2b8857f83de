//! The hooks a stack's environment declares, by resource path: the one trace of a hook that
//! Heat keeps once the pause event is purged.
//!
//! What Heat does (openstack/heat, master as of Heat 27):
//!
//! - `GET /v1/{tenant}/stacks/{name}/{id}/environment` (route `stack_lookup` in
//!   `heat/api/openstack/v1/__init__.py`, `StackController.environment` in `stacks.py`,
//!   `EngineService.get_environment` in `heat/engine/service.py`) answers the stack's stored
//!   environment as a bare JSON object (no wrapping key): `Template.store` saved
//!   `Environment.env_as_dict()`, i.e. `parameters`, `parameter_defaults`, `event_sinks`,
//!   `encrypted_param_names` and `resource_registry` (`ResourceRegistry.as_dict`: the user's
//!   type mappings plus `resources`), hidden parameters shown as `******`. Under
//!   convergence (the default) an update stores its new template and environment when it
//!   starts (`Stack.converge_stack`), so during an update this is the environment the update
//!   was sent with (a PATCH merges it into the previous one).
//! - Hooks live under `resource_registry.resources`: a key is an fnmatch pattern of a
//!   resource name; its value is a dict holding `hooks` (a hook type or a list of them:
//!   `pre-create`, `pre-update`, `pre-delete`, `post-create`, `post-update`, `post-delete`,
//!   checked on load by `is_hook_definition` in `heat/engine/environment.py`) and, for a
//!   resource that owns a nested stack, the patterns of the nested stack's resources:
//!   `{"nodes": {"*": {"hooks": "pre-update"}}}` holds every member of the group `nodes`.
//! - `ResourceRegistry.matches_hook(name, hook)` tests every pattern of the stack's
//!   `resources` with `fnmatch.fnmatchcase(name, pattern)`. A nested stack gets its
//!   parent's registry narrowed by `remove_resources_except(owner_name)`
//!   (`get_child_environment`): the dicts of every pattern matching the owning resource's
//!   name, merged one level deep in order (`dict.update`), then the exact-name entry again
//!   on top. So a path is matched one name per level, and an exact name wins over a glob
//!   that defines the same key. [`EnvironmentHooks::matches`] repeats that walk.
//!
//! Bounded: nesting beyond [`MAX_DEPTH`] levels and entries beyond [`MAX_ENTRIES`] are
//! skipped while decoding; nothing but hook names and patterns is kept.

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::cell::Cell;
use std::fmt;

/// Levels of `resources` kept: a root, a group, its members, their resources and a few more.
pub const MAX_DEPTH: usize = 8;
/// Patterns and hook names kept in all; an environment with more is not one a person wrote.
pub const MAX_ENTRIES: usize = 20_000;
/// Longest pattern or hook name kept (Heat's names are at most 255 characters).
const MAX_NAME: usize = 255;

/// One level of `resources`: the hooks declared for the resource whose dict this is, and the
/// patterns below it, in the order Heat stored them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookLevel {
    hooks: Vec<String>,
    children: Vec<(String, HookLevel)>,
}

impl HookLevel {
    /// `dict.update(other)`, as `remove_resources_except` merges: a key already present keeps
    /// its place and takes the new value.
    fn update_from(&mut self, other: &HookLevel) {
        for (key, level) in &other.children {
            match self.children.iter_mut().find(|(k, _)| k == key) {
                Some(slot) => slot.1 = level.clone(),
                None => self.children.push((key.clone(), level.clone())),
            }
        }
    }

    /// The registry a nested stack owned by resource `name` sees.
    fn narrowed_to(&self, name: &str) -> HookLevel {
        let mut out = HookLevel::default();
        for (pattern, level) in &self.children {
            if fnmatch(pattern, name) {
                out.update_from(level);
            }
        }
        if let Some((_, exact)) = self.children.iter().find(|(k, _)| k == name) {
            out.update_from(exact);
        }
        out
    }

    fn count(&self) -> usize {
        self.hooks.len()
            + self
                .children
                .iter()
                .map(|(_, l)| 1 + l.count())
                .sum::<usize>()
    }
}

/// The hooks of a stack's environment (`GET .../environment`), nothing else of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvironmentHooks {
    resources: HookLevel,
}

impl EnvironmentHooks {
    /// Whether no hook is declared at all.
    pub fn is_empty(&self) -> bool {
        fn any_hook(l: &HookLevel) -> bool {
            !l.hooks.is_empty() || l.children.iter().any(|(_, c)| any_hook(c))
        }
        !any_hook(&self.resources)
    }

    /// Whether Heat would hold the resource at `path` (resource names from this stack down:
    /// `["nodes", "3"]`) on `hook`: `matches_hook` at the last level, after narrowing the
    /// registry through each owning resource as nested stacks do.
    pub fn matches(&self, path: &[&str], hook: &str) -> bool {
        let Some((last, owners)) = path.split_last() else {
            return false;
        };
        let mut level = self.resources.clone();
        for owner in owners {
            level = level.narrowed_to(owner);
        }
        level
            .children
            .iter()
            .any(|(pattern, l)| fnmatch(pattern, last) && l.hooks.iter().any(|h| h == hook))
    }

    /// Patterns and hook names kept.
    pub fn entries(&self) -> usize {
        self.resources.count()
    }

    /// The hooks declared at exactly `keys` (keys as written in the environment, no glob
    /// matching: `["kube_minions", "*"]`), or `None` when a key of the path is absent.
    pub fn hooks_at(&self, keys: &[&str]) -> Option<&[String]> {
        self.level_at(keys).map(|l| l.hooks.as_slice())
    }

    fn level_at(&self, keys: &[&str]) -> Option<&HookLevel> {
        let mut level = &self.resources;
        for key in keys {
            level = &level.children.iter().find(|(k, _)| k == key)?.1;
        }
        Some(level)
    }

    /// What exactly `keys` held in this environment: read before an action puts a hook
    /// there, it is what the action's end puts back.
    pub fn prior_entry(&self, keys: &[&str]) -> PriorEntry {
        let mut level = &self.resources;
        for (depth, key) in keys.iter().enumerate() {
            match level.children.iter().find(|(k, _)| k == key) {
                Some((_, l)) => level = l,
                None => return PriorEntry::AbsentFrom(depth),
            }
        }
        PriorEntry::Present(level.hooks.clone())
    }

    /// Every exact path (up to the pattern holding them) whose hooks include `hook`, as
    /// written in the environment: `[["kube_minions", "*"]]`.
    pub fn paths_with(&self, hook: &str) -> Vec<Vec<String>> {
        fn walk(level: &HookLevel, hook: &str, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
            if !path.is_empty() && level.hooks.iter().any(|h| h == hook) {
                out.push(path.clone());
            }
            for (k, l) in &level.children {
                path.push(k.clone());
                walk(l, hook, path, out);
                path.pop();
            }
        }
        let mut out = Vec::new();
        walk(&self.resources, hook, &mut Vec::new(), &mut out);
        out
    }
}

/// What one exact key path of the environment's `resources` held before an action set a
/// hook there (see [`EnvironmentHooks::prior_entry`]).
///
/// Heat merges a PATCH's environment into the stored one (`ResourceRegistry.load`, in
/// `heat/engine/environment.py`): a dict is merged key by key, a `hooks` value replaces the
/// stored one, and a `null` value removes the stored key (`_register_info(path, None)`
/// pops it) unless the key ends in `*`: then only type mappings matching the glob go, never
/// a dict of hooks. So a hook added where nothing was is taken back whole by a `null` at the
/// first key that was absent; under the member pattern `*` (a glob) only its `hooks` key can
/// be taken back, leaving `"*": {}`, which holds nothing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PriorEntry {
    /// The key at this depth of the path (0 = the first) was absent, and so every key below.
    AbsentFrom(usize),
    /// Every key was there; the last one declared these hooks (none: no `hooks` key, or an
    /// empty list).
    Present(Vec<String>),
}

/// Heat's hook types, each with its letter in [`PriorEntry::code`]: Heat refuses any other.
const HOOK_LETTERS: [(char, &str); 6] = [
    ('c', "pre-create"),
    ('u', "pre-update"),
    ('d', "pre-delete"),
    ('C', "post-create"),
    ('U', "post-update"),
    ('D', "post-delete"),
];

/// The deepest path a prior entry's code may name (a code is read back from Heat's tags:
/// anyone may have written it).
const PRIOR_DEPTH_MAX: usize = 16;

impl PriorEntry {
    /// A few characters saying this entry, for a stack tag: `aN`, the key at depth N of the
    /// path was absent (and all below); `p` and one letter per hook declared (`c`/`u`/`d`
    /// pre-create/update/delete, `C`/`U`/`D` post-…). `None` for a hook Heat does not know.
    pub fn code(&self) -> Option<String> {
        match self {
            PriorEntry::AbsentFrom(depth) => Some(format!("a{depth}")),
            PriorEntry::Present(hooks) => {
                let letters: Option<String> = hooks
                    .iter()
                    .map(|h| HOOK_LETTERS.iter().find(|(_, n)| n == h).map(|(c, _)| *c))
                    .collect();
                letters.map(|l| format!("p{l}"))
            }
        }
    }

    /// The entry a [`PriorEntry::code`] says; `None` for any text that does not read whole
    /// (bounded: a depth up to 16, at most one letter per hook type).
    pub fn from_code(code: &str) -> Option<PriorEntry> {
        let mut chars = code.chars();
        match chars.next()? {
            'a' => {
                let depth: usize = chars.as_str().parse().ok()?;
                (depth <= PRIOR_DEPTH_MAX).then_some(PriorEntry::AbsentFrom(depth))
            }
            'p' if chars.as_str().chars().count() <= HOOK_LETTERS.len() => chars
                .map(|c| {
                    HOOK_LETTERS
                        .iter()
                        .find(|(l, _)| *l == c)
                        .map(|(_, n)| n.to_string())
                })
                .collect::<Option<Vec<String>>>()
                .map(PriorEntry::Present),
            _ => None,
        }
    }

    /// The hooks the path holds with `hook` added to what was there.
    pub fn hooks_with(&self, hook: &str) -> Vec<String> {
        let mut hooks = match self {
            PriorEntry::AbsentFrom(_) => Vec::new(),
            PriorEntry::Present(h) => h.clone(),
        };
        if !hooks.iter().any(|h| h == hook) {
            hooks.push(hook.to_string());
        }
        hooks
    }

    /// `{"resource_registry": {"resources": …}}` setting `hook` at `keys`, keeping the hooks
    /// already declared there (the operator's own stay).
    pub fn adding(&self, keys: &[&str], hook: &str) -> serde_json::Value {
        let hooks = serde_json::json!({ "hooks": self.hooks_with(hook) });
        registry_patch(keys, hooks)
    }

    /// The environment PATCH that returns `keys` to this prior state: a `null` at the first
    /// key that was absent (a key that is not a glob), else the prior `hooks` (or a `null`
    /// `hooks`, when there were none).
    pub fn restoring(&self, keys: &[&str]) -> serde_json::Value {
        match self {
            PriorEntry::AbsentFrom(depth) => match keys.get(*depth) {
                Some(key) if !key.ends_with('*') => {
                    registry_patch(&keys[..=*depth], serde_json::Value::Null)
                }
                _ => registry_patch(keys, serde_json::json!({ "hooks": null })),
            },
            PriorEntry::Present(hooks) if hooks.is_empty() => {
                registry_patch(keys, serde_json::json!({ "hooks": null }))
            }
            PriorEntry::Present(hooks) => {
                registry_patch(keys, serde_json::json!({ "hooks": hooks }))
            }
        }
    }

    /// Whether the environment `now` declares at `keys` the hooks this prior state did (the
    /// restore took: an entry left as `{}` declares none, as an absent one).
    pub fn is_restored_in(&self, now: &EnvironmentHooks, keys: &[&str]) -> bool {
        let mut want = match self {
            PriorEntry::AbsentFrom(_) => Vec::new(),
            PriorEntry::Present(h) => h.clone(),
        };
        let mut have = now
            .hooks_at(keys)
            .map(<[String]>::to_vec)
            .unwrap_or_default();
        want.sort();
        have.sort();
        want == have
    }
}

/// `{"resource_registry": {"resources": {k0: {k1: … {k_last: leaf}}}}}`: the environment
/// PATCH that sets `leaf` at the key path `keys` and, Heat merging it, nothing else.
pub fn registry_patch(keys: &[&str], leaf: serde_json::Value) -> serde_json::Value {
    let mut inner = leaf;
    for key in keys.iter().rev() {
        let mut level = serde_json::Map::new();
        level.insert((*key).to_string(), inner);
        inner = serde_json::Value::Object(level);
    }
    serde_json::json!({ "resource_registry": { "resources": inner } })
}

// ---- decoding: `{"resource_registry": {"resources": {...}}}`, everything else skipped ----

impl<'de> Deserialize<'de> for EnvironmentHooks {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Env {
            #[serde(default)]
            resource_registry: Option<Registry>,
        }
        struct Registry(HookLevel);
        impl<'de> Deserialize<'de> for Registry {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(RegistryVisitor)
            }
        }
        struct RegistryVisitor;
        impl<'de> Visitor<'de> for RegistryVisitor {
            type Value = Registry;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a resource registry")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Registry, A::Error> {
                let budget = Cell::new(MAX_ENTRIES);
                let mut resources = HookLevel::default();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "resources" {
                        resources = map
                            .next_value_seed(LevelSeed {
                                depth: 0,
                                budget: &budget,
                            })?
                            .unwrap_or_default();
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(Registry(resources))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Registry, E> {
                Ok(Registry(HookLevel::default()))
            }
        }
        let env = Env::deserialize(d)?;
        Ok(EnvironmentHooks {
            resources: env.resource_registry.map(|r| r.0).unwrap_or_default(),
        })
    }
}

/// Decodes one dict of `resources` (or skips a value that is not one: a type mapping, a
/// `restricted_actions`), down to [`MAX_DEPTH`], spending `budget` per entry kept.
struct LevelSeed<'b> {
    depth: usize,
    budget: &'b Cell<usize>,
}

impl LevelSeed<'_> {
    fn spend(&self) -> bool {
        let left = self.budget.get();
        self.budget.set(left.saturating_sub(1));
        left > 0
    }
}

impl<'de> DeserializeSeed<'de> for LevelSeed<'_> {
    type Value = Option<HookLevel>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for LevelSeed<'_> {
    type Value = Option<HookLevel>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a registry entry")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut level = HookLevel::default();
        while let Some(key) = map.next_key::<String>()? {
            if key == "hooks" {
                let HookNames(names) = map.next_value()?;
                for name in names {
                    if self.spend() {
                        level.hooks.push(name);
                    }
                }
            } else if self.depth + 1 >= MAX_DEPTH || key.chars().count() > MAX_NAME {
                map.next_value::<IgnoredAny>()?;
            } else {
                let child = map.next_value_seed(LevelSeed {
                    depth: self.depth + 1,
                    budget: self.budget,
                })?;
                if let Some(child) = child {
                    if self.spend() {
                        level.children.push((key, child));
                    }
                }
            }
        }
        Ok(Some(level))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// `hooks`: one name or a list of names; anything else (Heat would have refused it) is none.
struct HookNames(Vec<String>);

impl<'de> Deserialize<'de> for HookNames {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Item {
            Name(String),
            Other(IgnoredAny),
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Names {
            One(String),
            Many(Vec<Item>),
            Other(IgnoredAny),
        }
        let keep = |s: String| (s.chars().count() <= MAX_NAME).then_some(s);
        Ok(HookNames(match Names::deserialize(d)? {
            Names::One(s) => keep(s).into_iter().collect(),
            Names::Many(items) => items
                .into_iter()
                .filter_map(|i| match i {
                    Item::Name(s) => keep(s),
                    Item::Other(_) => None,
                })
                .collect(),
            Names::Other(_) => vec![],
        }))
    }
}

// ---- fnmatch.fnmatchcase ----

/// One token of a glob, as Python's `fnmatch.translate` reads it.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Star,
    AnyOne,
    Set {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    Lit(char),
}

/// Splits a pattern: `*`, `?`, `[seq]`, `[!seq]` (a `]` right after the opening is part of
/// the set; a `[` never closed is a literal `[`), anything else literal.
fn tokens(pattern: &str) -> Vec<Token> {
    let p: Vec<char> = pattern.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < p.len() {
        let c = p[i];
        i += 1;
        match c {
            '*' => {
                if out.last() != Some(&Token::Star) {
                    out.push(Token::Star);
                }
            }
            '?' => out.push(Token::AnyOne),
            '[' => {
                let mut j = i;
                if p.get(j) == Some(&'!') {
                    j += 1;
                }
                if p.get(j) == Some(&']') {
                    j += 1;
                }
                while j < p.len() && p[j] != ']' {
                    j += 1;
                }
                if j >= p.len() {
                    out.push(Token::Lit('['));
                    continue;
                }
                out.push(set(&p[i..j]));
                i = j + 1;
            }
            c => out.push(Token::Lit(c)),
        }
    }
    out
}

/// The body of `[...]`: `!` first negates, `a-z` is a range, a `-` first or last is itself.
fn set(body: &[char]) -> Token {
    let (negated, body) = match body.first() {
        Some('!') => (true, &body[1..]),
        _ => (false, body),
    };
    let mut ranges = Vec::new();
    let mut k = 0;
    while k < body.len() {
        if k + 2 < body.len() && body[k + 1] == '-' {
            ranges.push((body[k], body[k + 2]));
            k += 3;
        } else {
            ranges.push((body[k], body[k]));
            k += 1;
        }
    }
    Token::Set { negated, ranges }
}

fn token_matches(t: &Token, c: char) -> bool {
    match t {
        Token::Star => true,
        Token::AnyOne => true,
        Token::Set { negated, ranges } => {
            ranges.iter().any(|(a, b)| *a <= c && c <= *b) != *negated
        }
        Token::Lit(l) => *l == c,
    }
}

/// `fnmatch.fnmatchcase(name, pattern)`: case-sensitive, linear backtracking over `*` only
/// (no exponential blow-up on hostile patterns).
pub fn fnmatch(pattern: &str, name: &str) -> bool {
    let p = tokens(pattern);
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some(Token::Star) => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(t) if token_matches(t, n[ni]) => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|t| *t == Token::Star)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> EnvironmentHooks {
        serde_json::from_value(v).expect("environment")
    }

    /// The shape `env_as_dict` stores and the route returns, as Heat 27 answers it.
    fn heat_env(resources: serde_json::Value) -> serde_json::Value {
        json!({
            "parameters": {"v": "b"},
            "parameter_defaults": {},
            "event_sinks": [],
            "encrypted_param_names": [],
            "resource_registry": {
                "OS::Custom::Thing": "thing.yaml",
                "resources": resources
            }
        })
    }

    #[test]
    fn fnmatch_like_python_fnmatchcase() {
        assert!(fnmatch("*", "17"));
        assert!(fnmatch("*", ""));
        assert!(fnmatch("1?", "17"));
        assert!(!fnmatch("1?", "1"));
        assert!(fnmatch("[0-4]", "3"));
        assert!(!fnmatch("[0-4]", "7"));
        assert!(fnmatch("[!0-4]", "7"));
        assert!(fnmatch("[]x]", "]"));
        assert!(fnmatch("a[", "a["), "an unclosed [ is literal");
        assert!(fnmatch("[-a]", "-"));
        assert!(!fnmatch("Nodes", "nodes"), "case-sensitive");
        assert!(fnmatch("*_suffix", "db_suffix"));
        assert!(!fnmatch("prefix_*", "db_suffix"));
        assert!(fnmatch("*a*b*c", "xxaxxbxxc"));
        // Hostile: many stars against a long miss ends quickly.
        let pat = "*a".repeat(100) + "b";
        assert!(!fnmatch(&pat, &"a".repeat(255)));
    }

    #[test]
    fn hooks_on_a_group_member_path_match_by_level() {
        let env = parse(heat_env(json!({
            "nodes": {"*": {"hooks": ["pre-update", "pre-delete"]}, "3": {"hooks": "pre-create"}},
            "db": {"hooks": "pre-update"},
            "web_*": {"server": {"hooks": "pre-update"}}
        })));
        assert!(env.matches(&["nodes", "7"], "pre-update"));
        assert!(env.matches(&["nodes", "7"], "pre-delete"));
        assert!(!env.matches(&["nodes", "7"], "pre-create"));
        // Both `*` and `3` match `3` at the last level: matches_hook tries every pattern.
        assert!(env.matches(&["nodes", "3"], "pre-create"));
        assert!(env.matches(&["nodes", "3"], "pre-update"));
        assert!(env.matches(&["db"], "pre-update"));
        assert!(
            !env.matches(&["nodes"], "pre-update"),
            "the group itself has none"
        );
        assert!(env.matches(&["web_1", "server"], "pre-update"));
        assert!(!env.matches(&["web_1"], "pre-update"));
        assert!(!env.matches(&["nodes", "7", "server"], "pre-update"));
        assert!(!env.matches(&[], "pre-update"));
        assert!(!env.is_empty());
    }

    #[test]
    fn an_exact_name_wins_over_a_glob_defining_the_same_key() {
        // remove_resources_except: globs merged first, then the exact entry on top.
        let env = parse(heat_env(json!({
            "nodes": {"*": {"hooks": "pre-delete"}},
            "node*": {"*": {"hooks": "pre-update"}}
        })));
        assert!(env.matches(&["nodes", "1"], "pre-delete"));
        assert!(!env.matches(&["nodes", "1"], "pre-update"));
        assert!(env.matches(&["node2", "1"], "pre-update"));
    }

    #[test]
    fn no_registry_or_odd_values_mean_no_hooks() {
        for body in [
            json!({}),
            json!({"resource_registry": null}),
            json!({"resource_registry": {"resources": []}}),
            json!({"resource_registry": {"resources": {"a": "OS::Nova::Server"}}}),
            json!({"resource_registry": {"resources": {"a": {"hooks": 3}}}}),
            json!({"resource_registry": {"resources": {"a": {"restricted_actions": "replace"}}}}),
        ] {
            let env = parse(body.clone());
            assert!(env.is_empty(), "{body}");
            assert!(!env.matches(&["a"], "pre-update"));
        }
        let mixed =
            parse(json!({"resource_registry": {"resources": {"a": {"hooks": [1, "pre-update"]}}}}));
        assert!(mixed.matches(&["a"], "pre-update"));
    }

    #[test]
    fn nesting_and_size_are_bounded() {
        let mut deep = json!({"hooks": "pre-update"});
        for _ in 0..(MAX_DEPTH + 4) {
            deep = json!({ "*": deep });
        }
        let env = parse(json!({"resource_registry": {"resources": deep}}));
        assert!(env.is_empty(), "hooks below MAX_DEPTH are not kept");
        let path: Vec<&str> = vec!["x"; MAX_DEPTH + 5];
        assert!(!env.matches(&path, "pre-update"));

        let many: serde_json::Map<String, serde_json::Value> = (0..MAX_ENTRIES + 100)
            .map(|i| (format!("r{i}"), json!({"hooks": "pre-update"})))
            .collect();
        let env = parse(json!({"resource_registry": {"resources": many}}));
        assert!(env.entries() <= MAX_ENTRIES + 1);
    }

    #[test]
    fn hostile_bodies_decode_or_fail_without_panicking() {
        for body in [
            &b"{\"resource_registry\": {\"resources\": {\"a\": {\"hooks\": [[[[]]]]}}}}"[..],
            b"{\"resource_registry\": 7}",
            b"[]",
            b"{\"resource_registry\": {\"resources\": {\"[\": {\"hooks\": \"pre-update\"}}}}",
            b"{\"resource_registry\": {\"resources\": {\"a\":",
        ] {
            let _ = serde_json::from_slice::<EnvironmentHooks>(body);
        }
        let env: EnvironmentHooks = serde_json::from_slice(
            b"{\"resource_registry\": {\"resources\": {\"[\": {\"hooks\": \"pre-update\"}}}}",
        )
        .expect("decodes");
        assert!(env.matches(&["["], "pre-update"));
    }

    /// Applies a PATCH environment to a stored one as Heat's `ResourceRegistry.load` does
    /// (dicts merged key by key, `hooks` replaced, `null` pops a key not ending in `*`),
    /// on plain JSON: the model the restore is checked against.
    fn heat_load(stored: &mut serde_json::Value, patch: &serde_json::Value) {
        let (Some(stored), Some(patch)) = (stored.as_object_mut(), patch.as_object()) else {
            return;
        };
        for (k, v) in patch {
            if v.is_null() {
                if !k.ends_with('*') {
                    stored.remove(k);
                }
            } else if k == "hooks" || !v.is_object() {
                stored.insert(k.clone(), v.clone());
            } else {
                let slot = stored.entry(k.clone()).or_insert_with(|| json!({}));
                heat_load(slot, v);
            }
        }
    }

    fn after(stored: &serde_json::Value, patch: &serde_json::Value) -> serde_json::Value {
        let mut env = stored.clone();
        heat_load(&mut env, patch);
        env
    }

    #[test]
    fn a_hook_added_then_restored_leaves_the_environment_as_it_was() {
        let keys = ["kube_minions", "*"];
        let cases = [
            // Nothing at all in the registry.
            json!({"resource_registry": {"resources": {}}}),
            // Another group's hooks and a type mapping: untouched.
            json!({"resource_registry": {"OS::Foo": "foo.yaml", "resources": {
                "kube_masters": {"*": {"hooks": ["pre-update"]}}}}}),
            // The group is there with the operator's own hook on one member.
            json!({"resource_registry": {"resources": {
                "kube_minions": {"3": {"hooks": "pre-delete"}}}}}),
            // The operator's own hook on every member: kept, ours added beside it.
            json!({"resource_registry": {"resources": {
                "kube_minions": {"*": {"hooks": ["pre-create"]}}}}}),
        ];
        for stored in cases {
            let before: EnvironmentHooks = serde_json::from_value(stored.clone()).expect("env");
            let prior = before.prior_entry(&keys);
            let during = after(&stored, &prior.adding(&keys, "pre-update"));
            let held: EnvironmentHooks = serde_json::from_value(during.clone()).expect("env");
            assert!(
                held.matches(&["kube_minions", "4"], "pre-update"),
                "{during}"
            );
            for h in before.hooks_at(&keys).unwrap_or_default() {
                assert!(
                    held.matches(&["kube_minions", "4"], h),
                    "kept {h}: {during}"
                );
            }
            let restored = after(&during, &prior.restoring(&keys));
            let now: EnvironmentHooks = serde_json::from_value(restored.clone()).expect("env");
            assert!(prior.is_restored_in(&now, &keys), "{restored}");
            // Every hook type declared where it was, and nowhere else (a `"*": {}` left under
            // a group that had other entries declares nothing).
            for hook in ["pre-create", "pre-update", "pre-delete"] {
                assert_eq!(
                    now.paths_with(hook),
                    before.paths_with(hook),
                    "{hook}: {stored} -> {during} -> {restored}"
                );
            }
            // Where the group was absent, the JSON itself is as before.
            if matches!(prior, PriorEntry::AbsentFrom(0)) {
                assert_eq!(restored, stored);
            }
        }
    }

    #[test]
    fn a_nested_group_path_is_restored_by_removing_its_first_absent_key() {
        let keys = ["roles", "Compute", "*"];
        let stored = json!({"resource_registry": {"resources": {"roles": {"Controller": {}}}}});
        let before: EnvironmentHooks = serde_json::from_value(stored.clone()).expect("env");
        let prior = before.prior_entry(&keys);
        assert_eq!(prior, PriorEntry::AbsentFrom(1));
        assert_eq!(
            prior.restoring(&keys),
            json!({"resource_registry": {"resources": {"roles": {"Compute": null}}}})
        );
        let during = after(&stored, &prior.adding(&keys, "pre-update"));
        assert_eq!(after(&during, &prior.restoring(&keys)), stored);
    }

    #[test]
    fn hooks_left_anywhere_are_listed_by_path() {
        let env = parse(json!({"resource_registry": {"resources": {
            "kube_minions": {"*": {"hooks": ["pre-update"]}},
            "racks": {"*": {"nodes": {"*": {"hooks": "pre-update"}}}},
            "db": {"hooks": "pre-create"}}}}));
        assert_eq!(
            env.paths_with("pre-update"),
            vec![
                vec!["kube_minions".to_string(), "*".to_string()],
                vec!["racks".into(), "*".into(), "nodes".into(), "*".into()],
            ]
        );
    }
}
