"""The tools of requirements-dev.txt work quietly together: with cryptography 51, every ansible, ansible-playbook
and ansible-lint command began with a CryptographyDeprecationWarning about DSA, which ansible-core imports for its
SSH agent (issue 52, point 9); requirements-dev.txt pins a cryptography that does not deprecate it."""

import os
import subprocess
import sys


def test_ansible_starts_without_a_deprecation_warning():
    ansible = os.path.join(os.path.dirname(sys.executable), "ansible")
    proc = subprocess.run([ansible if os.path.exists(ansible) else "ansible", "--version"], capture_output=True, text=True,
                          check=False, timeout=120, env=dict(os.environ, PYTHONWARNINGS="default"))
    assert proc.returncode == 0 and proc.stdout.startswith("ansible [core "), proc.stdout + proc.stderr
    assert "Warning" not in proc.stderr, proc.stderr
