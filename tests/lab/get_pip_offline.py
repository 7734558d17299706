# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Offline stand-in for pip's get-pip.py, used by ansible-test to bootstrap its sanity venvs.

ansible-test downloads get-pip.py from a host CI cannot reach and caches it under
~/.ansible/test/cache/. This script takes that place: it gives the venv the pip that ships
with Python (ensurepip), then installs the requested pip/setuptools/wheel from the package
index like get-pip.py would. tests/run-stages.sh installs it into the cache.
"""

from __future__ import absolute_import, division, print_function

import subprocess
import sys

__metaclass__ = type


def main():
    args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
    subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"], stdout=subprocess.DEVNULL)
    sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", "--quiet", "--upgrade"] + args))


if __name__ == "__main__":
    main()
