"""`ringlog serve` keeps log.dirs owner-only: it holds the forwarding secret (__cluster_metadata)
and the SCRAM credentials (docs/security.md, "Calls passed on between brokers").

New directories are 0700 and new files 0600 whatever the caller's umask; an existing log.dirs that
group or others may read gets one warning at start naming the path and the chmod that fixes it.
"""
import os
import stat

import requests

from conftest import Broker, wait_until


def _modes_open_to_others(root):
    """(path, mode) of every entry under root (root included) with a group or other bit set."""
    open_entries = []
    for directory, dirs, files in os.walk(root):
        for name in [None] + dirs + files:
            path = directory if name is None else os.path.join(directory, name)
            mode = stat.S_IMODE(os.lstat(path).st_mode)
            if mode & 0o077:
                open_entries.append((path, oct(mode)))
    return open_entries


def test_fresh_log_dir_and_its_files_are_owner_only(ringlog_bin, tmp_path):
    old_umask = os.umask(0o022)   # the usual login umask: 0755 directories, 0644 files without serve's own
    try:
        b = Broker(tmp_path / "ringlog-data", extra_sets=["num.partitions=1"]).start()
    finally:
        os.umask(old_umask)
    try:
        b.create_topic("modes")
        r = requests.post(f"{b.url}/topics/modes", json={"records": [{"key": "k", "value": "v"}]},
                          headers={"Content-Type": "application/vnd.kafka.json.v2+json"}, timeout=10)
        assert r.status_code == 200, r.text
        metadata = b.data_dir / "__cluster_metadata-0"
        wait_until(lambda: metadata.is_dir() and any(metadata.iterdir()), 20, "__cluster_metadata-0 files")
        wait_until(lambda: any(p.name.startswith("modes-") for p in b.data_dir.iterdir()), 20, "the topic's directory")
        assert _modes_open_to_others(b.data_dir) == []
        assert stat.S_IMODE(os.stat(b.data_dir).st_mode) == 0o700
        assert "log.dirs is open to group or others" not in b.log_path.read_text()
    finally:
        assert b.stop() == 0


def test_existing_log_dir_readable_by_others_is_warned_about(ringlog_bin, tmp_path):
    data = tmp_path / "ringlog-data"
    data.mkdir()
    data.chmod(0o755)
    b = Broker(data).start()
    try:
        lines = [l for l in b.log_path.read_text().splitlines() if "log.dirs is open to group or others" in l]
        assert len(lines) == 1, lines
        assert "mode 0755" in lines[0] and f"chmod 700 {data}" in lines[0] and "forwarding secret" in lines[0]
        # Nothing serve creates inside it is open, even though the directory itself is left as it was.
        assert [p for p in _modes_open_to_others(data) if p[0] != str(data)] == []
    finally:
        assert b.stop() == 0
