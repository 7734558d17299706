"""The roles' documented options (meta/argument_specs.yml), for tests that check variables set
elsewhere (example inventories, role examples, AWX surveys) against them."""

import glob
import os

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ROLES = sorted(os.path.basename(os.path.dirname(os.path.dirname(p)))
               for p in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")))


def entry_point(role, name="main"):
    with open(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)["argument_specs"][name]


def options(role, name="main"):
    return entry_point(role, name).get("options") or {}


def role_of(variable):
    """The role a variable belongs to: the longest role name that prefixes it."""
    owners = [r for r in ROLES if variable.startswith(r + "_")]
    return max(owners, key=len) if owners else None


def validate(role, values, name="main"):
    """Errors of ansible-core's own argument spec validation for these role variables."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    result = ArgumentSpecValidator(options(role, name)).validate(dict(values))
    # Required options the caller did not set are not this check's business.
    return [str(e) for e in result.errors if "missing required arguments" not in str(e)]
