"""The one archive the program_install role sends a node (plugins/lookup/program_archive.py): each file under the
path it takes in the program's directory, root-owned, files 0644 and the folders above them 0755, never the program's
directory itself (its role owns it); the content is the collection's file, byte for byte."""

import os
import tarfile

import pytest

from ansible.errors import AnsibleLookupError
from ansible_collections.gpufabric.rdma.plugins.lookup.program_archive import LookupModule
from ansible_collections.gpufabric.rdma.plugins.lookup.program_closure import install_files

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
RELAY = "roles/fleet_monitoring/files/gpufabric_alert_relay.py"


def test_the_archive_holds_each_file_where_it_goes_root_owned():
    files = install_files(RELAY, "relay.py", "/opt/relay")
    (path,) = LookupModule().run([files])
    try:
        with tarfile.open(path) as archive:
            members = dict((m.name, m) for m in archive.getmembers())
            assert set(n for n, m in members.items() if m.isfile()) == set(f["dest"] for f in files)
            folders = sorted(n for n, m in members.items() if m.isdir())
            assert folders[:5] == ["ansible_collections", "ansible_collections/gpufabric", "ansible_collections/gpufabric/rdma",
                                   "ansible_collections/gpufabric/rdma/plugins",
                                   "ansible_collections/gpufabric/rdma/plugins/module_utils"]
            assert all((m.uid, m.gid, m.uname, m.gname) == (0, 0, "root", "root") for m in members.values())
            assert set(m.mode for m in members.values() if m.isfile()) == {0o644}
            assert set(m.mode for m in members.values() if m.isdir()) == {0o755}
            text = "ansible_collections/gpufabric/rdma/plugins/module_utils/common/text.py"
            with open(os.path.join(ROOT, "plugins", "module_utils", "common", "text.py"), "rb") as handle:
                assert archive.extractfile(text).read() == handle.read()
            with open(os.path.join(ROOT, RELAY), "rb") as handle:
                assert archive.extractfile("relay.py").read() == handle.read()
    finally:
        os.unlink(path)


@pytest.mark.parametrize("entries", [[], [{"src": RELAY}], [{"src": RELAY, "dest": "../relay.py"}],
                                     [{"src": "../../etc/passwd", "dest": "relay.py"}]])
def test_only_the_collections_files_inside_the_programs_directory_are_packed(entries):
    with pytest.raises(AnsibleLookupError, match="program_archive: "):
        LookupModule().run([entries])
