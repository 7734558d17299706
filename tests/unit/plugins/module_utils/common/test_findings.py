"""findings.py: the one finding shape and severity scale, importable on a node without the renderers."""
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import findings
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import health, readiness
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import node_checks
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import monitor, policy


def test_one_scale_everywhere():
    assert findings.SEVERITIES == ("critical", "warning", "info")
    assert policy.SEVERITIES is findings.SEVERITIES
    assert monitor.SEVERITY_RANK is findings.SEVERITY_RANK
    assert health.finding is findings.finding and readiness.finding is findings.finding and node_checks.finding is findings.finding


def test_a_severity_off_the_scale_is_refused_naming_the_check():
    with pytest.raises(ValueError) as raised:
        findings.finding("gpu_xid", "fatal", "n1", "Xid 79", "reset")
    assert str(raised.value) == "finding gpu_xid: severity must be one of critical, warning, info, got 'fatal'"


def test_counts_and_order():
    found = [findings.finding("b", "info", "n2", "", ""), findings.finding("a", "critical", "n1", "", ""),
             findings.finding("a", "warning", "n1", "", ""), dict(check="z", severity="odd", target="t")]
    assert findings.counts(found) == {"critical": 1, "warning": 1, "info": 1}
    assert [f["severity"] for f in findings.ordered(found)] == ["critical", "warning", "info", "odd"]


def test_node_side_code_does_not_pull_in_the_renderers():
    code = ("import sys; from ansible_collections.gpufabric.rdma.plugins.module_utils.common import findings; "
            "from ansible_collections.gpufabric.rdma.plugins.module_utils.node import node_checks; "
            "import json; print(json.dumps(sorted(m.rsplit('.', 1)[1] for m in sys.modules "
            "if m.startswith('ansible_collections.gpufabric.rdma.plugins.module_utils.'))))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout)
    assert "findings" in loaded and "node_checks" in loaded
    assert "readiness" not in loaded and "report" not in loaded and "chart" not in loaded, loaded
