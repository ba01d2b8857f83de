#!/usr/bin/env python3
"""Prepares the real-template corpus (tests/real_heat/corpus/index.yaml) for a Heat that has no
Nova, Neutron, Cinder, Octavia or Keystone catalog: one stack-create body per corpus entry,
written to OUT/<id>.json, the templates unmodified. Run by scripts/real-templates.sh with the
Heat venv's python (it imports heatclient, yaml and, for types Heat will not describe, heat).

How a template is loaded: exactly as Magnum's conductor loads it (magnum/drivers/heat/
template_def.py): heatclient's `template_utils.get_template_contents` on the driver's template
(nested templates and `get_file` contents go into `files`, keyed by their file:// URL, the
template's relative `type:` references rewritten to those URLs as Magnum's stacks have them) and
`process_multiple_environments_and_files` on the environments Magnum would pick.

Stand-ins (generated, never written per template): every resource type reachable from the
template (its resources, the nested templates in `files`, and the environments'
`resource_registry`) that this Heat does not list in `GET /resource_types` (the services it
lacks: Nova, Neutron, Cinder, Octavia; also Heat's own OS::Heat::SoftwareConfig,
MultipartMime and SoftwareDeployment, which this catalog-less Heat does not list either), and
that the environment does not already map, gets a provider template made from Heat's
`GET /resource_types/{type}/template?template_type=hot`: every property a parameter (custom
constraints dropped: they call the missing service; every parameter given a neutral default so
a property the template leaves out stays optional, as it is on the real type), every attribute an
output. Where Heat refuses to describe a type, the installed heat package's own schema of it is
used (`heat.engine.resources.global_env()`). The stand-in is registered in `resource_registry`
under the type's own name, so Heat still reports `OS::Nova::Server`, `OS::Neutron::Port`, ...

Addresses: attributes whose name says address (`first_address`, `networks`, `addresses`,
`fixed_ips`, `ip_address`, `*_ip`, `*_address`, `*_ips`) are computed by Heat itself (a `yaql`
output) from a key: the reference of the port the resource is given (`port`, `port_id`, or a
`networks` entry's `port`) when it has one, else its own stack id. A port's reference is its
stand-in stack's ARN, whose last segment is that stack's id, so a server and the port it boots on report the same address, as Nova and
Neutron do; every member gets a distinct address (the first 24 bits of a random UUID) that stays
the same for the resource's life. Floating addresses (attribute names saying `floating`, or a
FloatingIP's own address) come from the resource's own id in 172.24.0.0/16; fixed ones in
10.0.0.0/8. The values are shaped as the real attribute is: `networks` {private: [ip]},
`addresses` {private: [{addr, version}]}, `fixed_ips` [{ip_address, subnet_id}], strings.

Signals: a real cluster's servers run an agent (os-collect-config, or the `wc_notify` of
Magnum's user data) that signals the stack's WaitConditions and SoftwareDeployments. Here the
servers are stand-ins and nothing would ever signal, so every type whose creation waits for a
server's signal (OS::Heat::WaitCondition, OS::Heat::SoftwareDeployment and its group and
structured forms) is stood in for like a missing service: it completes at once, its
non-address attributes placeholders (`standin-<attribute>`). So are the wait condition
handles: their signal URL needs Heat's own endpoint in a Keystone catalog, which this Heat has
not (EndpointNotFound at create). The stack then looks like a healthy real cluster's once its
agents have reported, the state the corpus checks read; signalling from the test as an agent
would was not chosen because Heat's signal paths (CFN, Heat or Zaqar transports, token URLs)
all need the catalog this Heat lacks.
"""

import argparse
import json
import os
import sys
import urllib.parse
import urllib.request

import yaml
from heatclient.common import template_utils

# Types whose create completes only when a server's agent signals it (see the header).
SIGNALLED = {
    "OS::Heat::WaitCondition",
    "OS::Heat::WaitConditionHandle",
    "OS::Heat::UpdateWaitConditionHandle",
    "OS::Heat::SoftwareDeployment",
    "OS::Heat::SoftwareDeployments",
    "OS::Heat::SoftwareDeploymentGroup",
    "OS::Heat::StructuredDeployment",
    "OS::Heat::StructuredDeployments",
    "OS::Heat::StructuredDeploymentGroup",
}

# Neutral defaults per parameter type, for properties a template leaves out.
NEUTRAL = {
    "string": "",
    "number": 0,
    "boolean": False,
    "comma_delimited_list": [],
    "json": {},
}


def heat_get(heat_url, path):
    with urllib.request.urlopen(heat_url.rstrip("/") + path, timeout=30) as r:
        return json.loads(r.read().decode())


def is_file_type(t):
    return t.endswith((".yaml", ".yml", ".template", ".json")) or "://" in t


def types_in(template):
    """Resource types named by a template's resources (HOT or CFN)."""
    out = set()
    if not isinstance(template, dict):
        return out
    resources = template.get("resources") or template.get("Resources") or {}
    for res in resources.values():
        if not isinstance(res, dict):
            continue
        t = res.get("type") or res.get("Type")
        if isinstance(t, str):
            out.add(t)
        # A group's members: resource_def / resource (ResourceGroup, AutoScalingGroup).
        props = res.get("properties") or {}
        for key in ("resource_def", "resource"):
            d = props.get(key)
            if isinstance(d, dict) and isinstance(d.get("type"), str):
                out.add(d["type"])
    return out


def registry_types(registry):
    """Type names an environment's resource_registry maps to (global and per resource)."""
    out = set()
    for key, value in (registry or {}).items():
        if key == "resources" and isinstance(value, dict):
            for per in value.values():
                if isinstance(per, dict):
                    out |= registry_types(per)
        elif isinstance(value, str) and key != "hooks":
            out.add(value)
    return out


def reachable_types(template, files, env):
    seen = set()
    todo = [template] + [yaml.safe_load(v) for v in files.values() if looks_like_template(v)]
    for t in todo:
        seen |= types_in(t)
    seen |= registry_types(env.get("resource_registry"))
    return {t for t in seen if not is_file_type(t)}


def looks_like_template(text):
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    return isinstance(doc, dict) and (
        "heat_template_version" in doc or "HeatTemplateFormatVersion" in doc
        or "AWSTemplateFormatVersion" in doc)


def facade(heat_url, rtype):
    """Heat's own provider template of a type, or one built from the heat package's schema."""
    try:
        return heat_get(heat_url, "/resource_types/%s/template?template_type=hot"
                        % urllib.parse.quote(rtype))
    except Exception:  # noqa: BLE001 - Heat refused: fall back to its package's schema.
        from heat.engine import resources
        resources.initialise()
        cls = resources.global_env().get_class(rtype)
        return cls.resource_to_template(rtype, template_type="hot")


def address_like(name):
    n = name.lower()
    if "mac" in n:
        return False  # a MAC address is no IP address
    return (n in ("networks", "addresses", "fixed_ips", "first_address", "ip")
            or n.endswith(("_ip", "_ips", "_address", "_addresses", "ipv4", "ipv6")))


def address_yaql(params, floating):
    """A yaql output: an IPv4 address from the first 24 bits of a key UUID."""
    own = {"get_param": "OS::stack_id"}
    port = None
    for p in ("port", "port_id"):
        if p in params:
            port = {"get_param": p}
    nets = {"get_param": "networks"} if "networks" in params else []
    data = {"own": own, "port": port or "", "nets": nets}
    if floating:
        key = "$.data.own"
        prefix = "'172.24.'"
        take = "4"
    else:
        # networks entries arrive flattened by Heat: ".member.0.port=UUID".
        key = ("($.data.nets.where($.indexOf('.port=') >= 0).select($.split('=')[1]) + "
               "[$.data.port].where($ != '') + [$.data.own]).first()")
        prefix = "'10.'"
        take = "6"
    # A provider resource's reference is its stack's ARN (`arn:openstack:heat::P:stacks/N/ID`):
    # the id is its last segment (a plain stack id has one segment).
    hexval = ("%s.split('/').last().replace('-', '').toCharArray().take(%s)"
              ".aggregate($1 * 16 + '0123456789abcdef'.indexOf($2), 0)" % (key, take))
    if take == "6":
        expr = ("let(v => %s) -> %s + str(int($v / 65536)) + '.' + str(int($v / 256) mod 256)"
                " + '.' + str($v mod 256)" % (hexval, prefix))
    else:
        expr = ("let(v => %s) -> %s + str(int($v / 256) mod 256) + '.' + str($v mod 256)"
                % (hexval, prefix))
    return {"yaql": {"expression": expr, "data": data}}


def shaped(name, addr):
    n = name.lower()
    if n == "networks":
        return {"yaql": {"expression": "dict(private => [$.data.a])", "data": {"a": addr}}}
    if n == "addresses":
        return {"yaql": {"expression": "dict(private => [dict(addr => $.data.a, version => 4)])",
                         "data": {"a": addr}}}
    if n.endswith("fixed_ips") or n.endswith("_ips") or n.endswith("_addresses"):
        return {"yaql": {"expression":
                         "[dict(ip_address => $.data.a, subnet_id => 'standin-subnet')]",
                         "data": {"a": addr}}}
    return addr


PARAM_TYPES = {"String": "string", "Integer": "number", "Number": "number",
               "Boolean": "boolean", "List": "comma_delimited_list", "Map": "json"}


def hidden_properties(rtype):
    """Properties and attributes Heat's template of a type leaves out (hidden, deprecated ones
    such as a port's `replacement_policy` or a server's `first_address`) that real templates
    still use: from the heat package's schema of the type."""
    from heat.engine import resources
    resources.initialise()
    cls = resources.global_env().get_class(rtype)
    params = {name: {"type": PARAM_TYPES.get(schema.type, "json")}
              for name, schema in cls.properties_schema.items()}
    return params, list(cls.attributes_schema) + list(cls.base_attributes_schema)


def standin(heat_url, rtype):
    fac = facade(heat_url, rtype)
    hidden_params, all_attributes = hidden_properties(rtype)
    for name, p in hidden_params.items():
        fac.setdefault("parameters", {}).setdefault(name, p)
    for name in all_attributes:  # hidden ones too (a server's `first_address`)
        fac.setdefault("outputs", {}).setdefault(name, {})
    params = {}
    for pname, p in (fac.get("parameters") or {}).items():
        p = dict(p)
        cons = [c for c in p.get("constraints", []) if c and "custom_constraint" not in c]
        if cons:
            p["constraints"] = cons
        else:
            p.pop("constraints", None)
        if "default" not in p:
            # A property the real type leaves optional: a template that omits it is not
            # checked against its constraints (allowed values, ranges), so neither is the
            # neutral default that stands for "not given".
            p["default"] = NEUTRAL.get(p.get("type"), "")
            p.pop("constraints", None)
        params[pname] = p
    outputs = {}
    floating_type = "floating" in rtype.lower()
    for oname in (fac.get("outputs") or {}):
        if oname == "OS::stack_id":
            continue
        if address_like(oname):
            floating = "floating" in oname.lower() or (floating_type and "fixed" not in oname)
            value = shaped(oname, address_yaql(params, floating))
        elif oname in ("show",):
            value = {}
        else:
            value = "standin-%s" % oname
        outputs[oname] = {"value": value}
    return {
        "heat_template_version": "2018-08-31",
        "description": "Stand-in for %s generated by scripts/corpus_stack.py from Heat's "
                       "resource_types/%s/template" % (rtype, rtype),
        "parameters": params,
        "resources": {},
        "outputs": outputs,
    }


def prepare(entry, root, heat_url, served):
    if entry.get("ours"):
        base = entry["ours_dir"]
    else:
        base = os.path.join(root, "%s-%s" % (entry["package"], entry["version"]))
    tpl_path = os.path.join(base, entry["path"])
    files, template = template_utils.get_template_contents(template_file=tpl_path)
    env_names = list(ENV_SETS.get(entry.get("environment_set"), [])) + list(
        entry.get("environments") or [])
    env_paths = [os.path.join(base, e) for e in env_names]
    env_files, env = template_utils.process_multiple_environments_and_files(
        env_paths=env_paths)
    files.update(env_files)
    registry = env.setdefault("resource_registry", {})
    stood = []
    for t in sorted(reachable_types(template, files, env)):
        if t in registry:
            continue  # the environment maps it (Magnum::Optional::X -> OS::Heat::None, a file)
        if t in served and t not in SIGNALLED:
            continue
        key = "corpus-standin/%s.yaml" % t.replace("::", "__")
        files[key] = json.dumps(standin(heat_url, t))
        registry[t] = key
        stood.append(t)
    return {
        "template": template,
        "files": files,
        "environment": env,
        "parameters": parameters(entry, template),
        "stand_ins": stood,
    }


def parameters(entry, template):
    """The entry's parameter set and its own parameters, those the template declares."""
    merged = dict(SETS.get(entry.get("parameter_set"), {}))
    merged.update(entry.get("parameters") or {})
    declared = template.get("parameters") or template.get("Parameters") or {}
    return {k: v for k, v in merged.items() if k in declared}


SETS = {}
ENV_SETS = {}


def plain(o):
    """JSON for what YAML parsing leaves: bytes (file contents), dates (template versions)."""
    if isinstance(o, bytes):
        return o.decode()
    return str(o)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heat-url", required=True)
    ap.add_argument("--index", required=True)
    ap.add_argument("--root", required=True, help="where the wheels were installed")
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default=None)
    a = ap.parse_args()
    with open(a.index) as f:
        index = yaml.safe_load(f)
    SETS.update(index.get("parameter_sets") or {})
    ENV_SETS.update(index.get("environment_sets") or {})
    served = set(heat_get(a.heat_url, "/resource_types")["resource_types"])
    os.makedirs(a.out, exist_ok=True)
    for old in os.listdir(a.out):  # nothing left from an earlier index
        if old.endswith(".json") and not a.only:
            os.remove(os.path.join(a.out, old))
    ours_dir = os.path.join(os.path.dirname(os.path.abspath(a.index)), "ours")
    for entry in index["templates"]:
        if a.only and entry["id"] != a.only:
            continue
        entry["ours_dir"] = ours_dir
        if entry.get("unloadable"):
            print("%s: not loadable as shipped: %s" % (entry["id"], entry["unloadable"]),
                  file=sys.stderr)
            continue
        body = prepare(entry, a.root, a.heat_url, served)
        with open(os.path.join(a.out, entry["id"] + ".json"), "w") as f:
            json.dump(body, f, default=plain)
        print("%s: %d files, stand-ins: %s" % (entry["id"], len(body["files"]),
                                              ", ".join(body["stand_ins"])), file=sys.stderr)


if __name__ == "__main__":
    main()
