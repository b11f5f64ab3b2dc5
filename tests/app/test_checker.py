"""The LM check's request (app/checker.py): the question before the passage, so that one question's candidates share
the prompt up to the passage (a server's prompt cache evaluates it once); one token, its top log-probabilities."""
from __future__ import annotations

import httpx

from app import checker


def test_the_check_asks_with_the_question_first_and_reads_yes_minus_no(monkeypatch):
    sent: list[dict] = []

    def post(url, json, headers, timeout):
        sent.append(json)
        body = {"choices": [{"logprobs": {"content": [{"top_logprobs": [
            {"token": "Yes", "logprob": -0.2}, {"token": "No", "logprob": -1.7}]}]}}]}
        return httpx.Response(200, json=body, request=httpx.Request("POST", url))

    monkeypatch.setattr(httpx, "post", post)
    c = checker.LMChecker("http://127.0.0.1:1/v1")
    m1 = c.margin("How many staff?", "We employ 240 people.")
    c.margin("How many staff?", "The office is in Leeds.")
    assert round(m1, 3) == 1.5
    users = [b["messages"][1]["content"] for b in sent]
    assert all(u.startswith("Question: How many staff?\n\nPassage: ") for u in users)
    prefix = len("Question: How many staff?\n\nPassage: ")
    assert users[0][:prefix] == users[1][:prefix] and sent[0]["max_tokens"] == 1 and sent[0]["logprobs"] is True


def test_a_context_stops_the_check_server_it_started_and_serve_warms_it_in_the_background(tmp_path, monkeypatch):
    """`mgrag serve` starts the LM check's server in the background (the first question does not wait for the model
    to load); closing the context stops it (a llama-server outliving its app holds ~2 GiB)."""
    import app.evidence as evidence
    from app.context import AppContext
    from core.settings import Settings

    class Server:
        stopped = 0

        def stop(self):
            Server.stopped += 1

    ctx = AppContext(Settings(data_dir=tmp_path, lm_check="off"))
    assert evidence.warm_checker(ctx) is None  # off: nothing started
    ctx.settings.lm_check = "on"
    called = []
    monkeypatch.setattr(evidence, "checker", lambda c: called.append(c))
    t = evidence.warm_checker(ctx)
    t.join(5)
    assert called == [ctx] and t.daemon
    ctx.cache("lm_check")["server"] = Server()
    ctx.close()
    assert Server.stopped == 1


def test_a_sigterm_closes_the_served_app_so_its_check_server_stops(tmp_path):
    """`mgrag serve` stopped by SIGTERM (`docker stop`, systemd) closes its service as Ctrl-C does (before, the
    process ended without closing and the LM check's llama-server lived on, orphaned)."""
    import signal
    import subprocess
    import sys

    marker = tmp_path / "closed"
    code = f"""
import ui.app as u
class Service:
    def ensure_runner(self): pass
    def warm_checker(self): pass
    def resume_interrupted(self): pass
    def close(self, context=False):
        open({str(marker)!r}, "w").write("closed context=%s" % context)
u.start_service = lambda settings=None: Service()
u.launch = lambda service, host=None, port=None, block=False: (None, "http://127.0.0.1:1/")
print("serving", flush=True)
raise SystemExit(u.serve())
"""
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "serving"
    assert p.stdout.readline().startswith("MGRAG web app:")  # printed after the handler is installed
    p.send_signal(signal.SIGTERM)
    assert p.wait(20) == 0
    assert marker.read_text() == "closed context=True"
