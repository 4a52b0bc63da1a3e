"""``millpond storage``: a new cluster id, and the format step that gives every
directory of a node one cluster's meta.properties, refusing another cluster's."""

from __future__ import annotations

from pathlib import Path

import pytest

from millpond.__main__ import main
from millpond.storage.checkpoints import read_meta_properties
from millpond.storage.fs import OsFileSystem


def test_format_writes_one_cluster_id_into_every_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["storage", "random-uuid"]) == 0
    cluster_id = capsys.readouterr().out.strip()
    assert len(cluster_id) == 22
    dirs = [tmp_path / "a", tmp_path / "b", tmp_path / "meta"]
    args = [
        "storage", "format", "-t", cluster_id,
        "--override", "node.id=4",
        "--override", f"log.dirs={dirs[0]},{dirs[1]}",
        "--override", f"metadata.log.dir={dirs[2]}",
    ]  # fmt: skip
    assert main(args) == 0
    ids = set()
    for directory in dirs:
        meta = read_meta_properties(OsFileSystem(), str(directory / "meta.properties"))
        assert (meta.cluster_id, meta.node_id) == (cluster_id, 4)
        ids.add(meta.directory_id)
    assert len(ids) == 3 and None not in ids
    assert "Formatted" in capsys.readouterr().out
    # Formatting again for the same cluster and node changes nothing; another is refused.
    assert main(args) == 0
    other = args.copy()
    other[3] = "AAAAAAAAAAAAAAAAAAAAAA"
    assert main(other) == 1
    err = capsys.readouterr().err
    assert "does not match this cluster" in err and "hint:" in err


def test_a_cluster_id_that_is_not_a_uuid_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["storage", "format", "-t", "not-an-id", "--override", f"log.dirs={tmp_path}"]) == 1
    assert "random-uuid" in capsys.readouterr().err
    assert not (tmp_path / "meta.properties").exists()
