"""How a produce answer becomes ok / fail / unknown: only a certain refusal is "fail".

Run: /usr/bin/python3 -m pytest -q tests/cluster/test_workload.py   (meson test: cluster-workload)
"""
import json
import pathlib
import sys

import requests

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import workload  # noqa: E402


class Answer:
    def __init__(self, status, body):
        self.status_code = status
        self.text = json.dumps(body) if not isinstance(body, str) else body

    def json(self):
        return json.loads(self.text)


def classify(status, body):
    w = {"status": "unknown", "offset": None, "error": None}
    workload.Producer._classify(w, Answer(status, body))
    return w["status"], w["offset"]


def test_a_delivery_report_with_an_offset_is_ok():
    assert classify(200, {"error_code": 200, "offset": 17, "partition_id": 0}) == ("ok", 17)


def test_certain_refusals_fail():
    assert classify(422, {"error_code": 42201, "message": "too large"})[0] == "fail"
    assert classify(404, {"error_code": 40402, "message": "no partition"})[0] == "fail"
    assert classify(200, {"error_code": 400, "message": "bad data"})[0] == "fail"
    assert classify(500, {"error_code": 50003, "message": "only 1 of 3 replicas of jepsen-0 are in sync; "
                                                          "nothing was written"})[0] == "fail"


def test_anything_that_may_have_been_stored_is_unknown():
    assert classify(408, {"error_code": 40801, "message": "not replicated in time"})[0] == "unknown"
    assert classify(503, {"error_code": 50301, "message": "leadership moved: retry"})[0] == "unknown"
    assert classify(500, {"error_code": 50003, "message": "the ISR shrank after the append"})[0] == "unknown"
    assert classify(200, {"error_code": 50003, "message": "after append"})[0] == "unknown"
    assert classify(502, "<html>bad gateway</html>")[0] == "unknown"


def test_only_a_connection_never_made_is_a_certain_failure():
    refused = requests.exceptions.ConnectionError("HTTPConnectionPool: Max retries exceeded (Caused by "
                                                  "NewConnectionError('Failed to establish a new connection: "
                                                  "[Errno 111] Connection refused'))")
    assert workload._definite_failure(refused)
    assert workload._definite_failure(requests.exceptions.ConnectTimeout("connect timeout"))
    assert not workload._definite_failure(requests.exceptions.ReadTimeout("read timed out"))
    assert not workload._definite_failure(requests.exceptions.ConnectionError(
        "('Connection aborted.', RemoteDisconnected('Remote end closed connection without response'))"))
