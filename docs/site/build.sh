#!/usr/bin/env bash
# Builds the docs site into build/docs/html (`make docs`). Fails on any warning: from
# antsibull-docs' lint of the collection's documentation and from Sphinx (-W, nitpicky).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$root/build/docs
rm -rf "$out"
mkdir -p "$out/rst/guides"
chmod og-w "$out/rst"

cd "$root"
# The troubleshooting page must match the failure messages in the source (make docs rewrites it).
python docs/site/troubleshooting.py --check
# Documentation errors of modules, filters and roles (schema, broken references, RST/markup).
antsibull-docs lint-collection-docs --plugin-docs --skip-rstcheck .

antsibull-docs --config-file docs/site/antsibull-docs.cfg collection --use-current \
  --dest-dir "$out/rst" gpufabric.rdma
cp docs/site/index.rst docs/site/ansible-labels.rst "$out/rst/"
# The Markdown pages keep their places relative to each other, so their links work on GitHub and here.
cp docs/guides/*.md "$out/rst/guides/"
for page in awx troubleshooting versioning architecture expected-figures kubernetes-dra; do cp "docs/$page.md" "$out/rst/"; done
sphinx-build -q -W --keep-going -b html -c docs/site "$out/rst" "$out/html"
echo "docs site: $out/html/index.html"
