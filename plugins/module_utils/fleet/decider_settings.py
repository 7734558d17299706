# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The remediation decider's configuration (the remediator service and the remediate module), checked."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import policy
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import chat, settings
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.settings import ConfigError

DECIDER_DEFAULTS = {"cluster": "gpufabric", "name": None, "listen": "0.0.0.0", "port": 8740, "secret": None,
                    "state_dir": "/var/lib/gpufabric-remediator", "remediation": {}, "webhooks": [], "timeout": 10,
                    "deliver_deadline": 60, "deliver_interval": 30, "command_timeout": 30, "batch_window": 0.3,
                    "answer_within": 45, "max_per_run": 20, "alertmanager_token": None}


def check_config(config):
    """The remediation decider's configuration (the remediator service and the remediate module)."""
    if not isinstance(config, dict):
        raise ConfigError("the configuration must be a JSON object")
    unknown = sorted(set(config) - set(DECIDER_DEFAULTS))
    if unknown:
        raise ConfigError("unknown configuration key(s): %s" % ", ".join(unknown))
    merged = dict(DECIDER_DEFAULTS, **config)
    settings.one_line_names(merged, ("cluster", "name", "listen"), allow_empty=False)
    port = merged["port"]
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError("port must be a TCP port number, got %r" % (port,))
    if merged["secret"] is not None:
        settings.secret(merged["secret"], "secret")
    if merged["alertmanager_token"] is not None:
        settings.secret(merged["alertmanager_token"], "alertmanager_token")
    settings.seconds(merged, ("timeout", "deliver_deadline", "deliver_interval", "command_timeout", "batch_window",
                              "answer_within"))
    mpr = merged["max_per_run"]
    if isinstance(mpr, bool) or not isinstance(mpr, int) or mpr < 1:
        raise ConfigError("max_per_run must be a whole number above 0, got %r" % (mpr,))
    chat.check_webhooks(merged["webhooks"])
    settings.state_dir(merged["state_dir"])
    try:
        merged["remediation"] = policy.check_config(merged["remediation"])
    except policy.PolicyError as exc:
        raise ConfigError(str(exc))
    return merged
