"""facts_file: the node record and its local fact link in one task - written only when the text differs, the link
made or mended, check mode changing nothing, and a regular file where the link goes refused, naming it."""

import json
import os

from ansible_collections.gpufabric.rdma.plugins.modules import facts_file
from moduletest import run_module

RECORD = {"hostname": "gpu01", "gpu": {"count": 8}, "schema": 3}


def test_record_and_link_are_written_once_and_previewed_in_check_mode(tmp_path):
    path, link = tmp_path / "etc" / "gpufabric" / "facts.json", tmp_path / "facts.d" / "gpufabric.fact"
    args = {"path": str(path), "content": RECORD, "link": str(link)}
    preview = run_module(facts_file, args, check_mode=True, diff=True)
    assert preview["changed"] and not path.exists() and not os.path.lexists(str(link))
    assert [d["after_header"] for d in preview["diff"]] == [str(path), str(link)]
    assert run_module(facts_file, args)["changed"]
    # The text Ansible's to_nice_json(sort_keys=true) wrote before, so an upgraded node's record does not change.
    assert path.read_text() == json.dumps(RECORD, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"
    assert oct(path.stat().st_mode & 0o777) == "0o644" and os.readlink(str(link)) == str(path)
    assert json.loads(link.read_text()) == RECORD
    again = run_module(facts_file, args, diff=True)
    assert again["changed"] is False and again["diff"] == []
    # A link pointing elsewhere is mended; a changed record is rewritten with its diff.
    link.unlink()
    os.symlink("/nowhere", str(link))
    changed = run_module(facts_file, dict(args, content=dict(RECORD, schema=4)), diff=True)
    assert changed["changed"] and '"schema": 3' in changed["diff"][0]["before"]
    assert os.readlink(str(link)) == str(path) and json.loads(path.read_text())["schema"] == 4


def test_a_regular_file_where_the_link_goes_is_refused_and_left(tmp_path):
    path, link = tmp_path / "facts.json", tmp_path / "gpufabric.fact"
    link.write_text("theirs\n")
    result = run_module(facts_file, {"path": str(path), "content": RECORD, "link": str(link)})
    assert result["failed"] and result["msg"].startswith("%s exists and is not a link" % link)
    assert link.read_text() == "theirs\n"


def test_paths_are_absolute_and_the_link_is_not_the_record(tmp_path):
    assert "must be an absolute normalised path" in run_module(facts_file, {"path": "facts.json", "content": {}})["msg"]
    path = str(tmp_path / "facts.json")
    assert run_module(facts_file, {"path": path, "content": {}, "link": path})["msg"].startswith("link %s is the record" % path)
    assert not os.path.exists(path)
