"""A GitHub API on loopback for tests: keeps state like GitHub and checks every exchange.

Every REST request and response is validated against GitHub's official OpenAPI description
(npm `@octokit/openapi`, installed by .ci/run; `REVIEWER_GITHUB_OPENAPI` names the file). The
few GraphQL operations `reviewer` sends are not in that description; they are checked against
an allow-list of exact query shapes instead. Violations are collected in `FakeGitHub.errors`
and answered with HTTP 400, so a test that triggers one fails.
"""

from __future__ import annotations

import copy
import datetime
import functools
import itertools
import json
import os
import re
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from openapi_core import Config, OpenAPI
from openapi_core.testing import MockRequest, MockResponse

SPEC_ENV = "REVIEWER_GITHUB_OPENAPI"
TOKEN = "ghs_ActionsTokenForTests0123456789abcdef"
"""The token of the bot user the `bot` fixture creates (like GITHUB_TOKEN's)."""
SPEC_HINT = (
    "npm install --prefix /tmp/octokit @octokit/openapi@23.0.2 && export "
    f"{SPEC_ENV}=/tmp/octokit/node_modules/@octokit/openapi/generated/api.github.com.json"
)
COMMENT_LIMIT = 65_536
SPEC_HOST = "https://api.github.com"

Json = dict[str, Any]
Reply = tuple[int, dict[str, str], Json | list[Any] | None]
"""An HTTP answer: status, headers and the JSON payload (None for no body)."""


@dataclass(frozen=True)
class Spec:
    """The parsed OpenAPI document and its validator."""

    document: Json
    api: OpenAPI

    def example(self, name: str) -> Json:
        """A deep copy of the named example from the description's components."""
        value = self.document["components"]["examples"][name]["value"]
        assert isinstance(value, dict)
        return copy.deepcopy(value)

    @functools.cached_property
    def routes(self) -> list[tuple[re.Pattern[str], str]]:
        """Every path template of the description as a regular expression."""
        return [
            (re.compile(re.sub(r"\{[^}]+\}", "[^/]+", route)), route)
            for route in self.document["paths"]
        ]

    def documents(self, route: str, method: str, status: int) -> bool:
        """Whether the description lists `status` for this operation."""
        responses = self.document["paths"][route][method]["responses"]
        return str(status) in responses or "default" in responses


@functools.cache
def load_spec() -> Spec:
    """Load the description once per test process (spec self-validation skipped: ~20 s)."""
    path = os.environ.get(SPEC_ENV, "")
    if not path or not Path(path).is_file():
        reason = f"GitHub's OpenAPI description not found; run: {SPEC_HINT}"
        # A convenience on a developer machine; in CI a missing install step must fail loudly.
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (.ci/run must install it)")
        pytest.skip(reason)
    document = json.loads(Path(path).read_text(encoding="utf-8"))
    return Spec(document, OpenAPI.from_dict(document, config=Config(spec_validator_cls=None)))


@dataclass
class User:
    """An account that owns a token."""

    login: str
    id: int
    type: str = "User"  # "Bot" for installation tokens such as GITHUB_TOKEN


@dataclass
class Comment:
    """A stored issue comment."""

    id: int
    number: int
    user: User
    body: str
    created: int
    updated: int
    minimized: bool = False


@dataclass
class Fault:
    """A scripted failure answered instead of the next matching request."""

    method: str
    path: re.Pattern[str]
    status: int
    headers: dict[str, str]
    body: Json


@dataclass
class Hook:
    """A callback run once, before the `nth` matching request is handled."""

    method: str
    path: re.Pattern[str]
    action: Callable[[], object]
    nth: int


@dataclass
class Exchange:
    """One request as the server saw it."""

    method: str
    path: str
    status: int
    user: str | None


@dataclass
class State:
    """What the fake GitHub knows."""

    users: dict[str, User] = field(default_factory=dict)  # by token
    comments: dict[int, Comment] = field(default_factory=dict)
    statuses: list[Json] = field(default_factory=list)
    check_runs: list[Json] = field(default_factory=list)
    pulls: dict[int, str] = field(default_factory=dict)  # number -> head sha
    bases: dict[int, tuple[str, str]] = field(default_factory=dict)  # number -> (ref, sha)
    closed: set[int] = field(default_factory=set)
    conflicting: set[int] = field(default_factory=set)  # GitHub reports mergeable: false
    faults: list[Fault] = field(default_factory=list)
    hooks: list[Hook] = field(default_factory=list)
    log: list[Exchange] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    foreign_writes: list[str] = field(default_factory=list)
    largest_body: int = 0


class FakeGitHub:
    """GitHub's REST endpoints for comments, statuses, check runs and pulls, plus GraphQL bits."""

    def __init__(self, spec: Spec, *, owner: str = "acme", repo: str = "fleet", prefix: str = ""):
        self.spec = spec
        self.owner = owner
        self.repo = repo
        self.prefix = prefix  # "/api/v3" to look like GitHub Enterprise Server
        self.rest_minimized = True  # newer descriptions report `minimized` on REST comments
        self.state = State()
        self._lock = threading.RLock()
        self._ids = itertools.count(1001)
        self._clock = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None

    # --- set-up helpers ---

    @property
    def url(self) -> str:
        """The API base URL to give clients."""
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.prefix}"

    @property
    def repository(self) -> str:
        """`owner/name` of the one repository served."""
        return f"{self.owner}/{self.repo}"

    def add_user(self, token: str, login: str, *, bot: bool = False) -> User:
        """Register a token and its account."""
        user = User(login, next(self._ids), "Bot" if bot else "User")
        self.state.users[token] = user
        return user

    def seed_comment(self, number: int, user: User, body: str) -> int:
        """A comment written before the test runs (by anyone)."""
        with self._lock:
            return self._store(number, user, body).id

    def fail(
        self,
        method: str,
        path: str,
        status: int,
        *,
        headers: dict[str, str] | None = None,
        message: str = "Server Error",
    ) -> None:
        """Answer the next `method` request whose path matches `path` with `status`."""
        body = {"message": message, "documentation_url": "https://docs.github.com/rest"}
        self.state.faults.append(Fault(method, re.compile(path), status, headers or {}, body))

    def before(self, method: str, path: str, action: Callable[[], object], *, nth: int = 1) -> None:
        """Run `action` (say, a whole concurrent run) before the `nth` matching request."""
        self.state.hooks.append(Hook(method, re.compile(path), action, nth))

    def comments(self, number: int) -> list[Comment]:
        """The comments of an issue, oldest first."""
        with self._lock:
            return sorted(
                (c for c in self.state.comments.values() if c.number == number), key=lambda c: c.id
            )

    def writes(self) -> list[Exchange]:
        """Every successful write request (GraphQL mutations included), in order."""
        return [
            e
            for e in self.state.log
            if e.method != "GET" and e.status < 300 and not e.path.endswith("#query")
        ]

    # --- life cycle ---

    @contextmanager
    def running(self) -> Iterator[FakeGitHub]:
        """Serve on a free loopback port for the duration of the block."""
        handler = functools.partial(_Handler, self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
            thread.join()

    # --- dispatch ---

    def handle(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        """Answer one HTTP request (called by the handler threads, one at a time)."""
        self._run_hooks(method, urlsplit(target).path)
        with self._lock:
            parts = urlsplit(target)
            path = parts.path
            user = self._user(headers)
            status, out_headers, payload = self._answer(method, path, parts.query, user, body)
            if path.endswith("/graphql"):
                path += "#mutation" if b'"mutation' in body else "#query"
            self.state.log.append(Exchange(method, path, status, user.login if user else None))
            data = json.dumps(payload).encode() if payload is not None else b""
            return status, out_headers, data

    def _run_hooks(self, method: str, path: str) -> None:
        # Outside the lock: a hook makes requests of its own to this server.
        with self._lock:
            due = []
            for hook in list(self.state.hooks):
                if hook.method == method and hook.path.search(path):
                    hook.nth -= 1
                    if hook.nth == 0:
                        self.state.hooks.remove(hook)
                        due.append(hook)
        for hook in due:
            hook.action()

    def _answer(self, method: str, path: str, query: str, user: User | None, body: bytes) -> Reply:
        graphql = "/api/graphql" if self.prefix else "/graphql"
        if path == graphql and method == "POST":
            return self._graphql(user, body)
        if not path.startswith(self.prefix):
            return 404, {}, {"message": "Not Found"}
        route_path = path[len(self.prefix) :]
        request = MockRequest(
            SPEC_HOST,
            method,
            route_path,
            args=_query(query),
            data=body or None,
            headers={"content-type": "application/json"} if body else None,
        )
        problem = self._validate_request(request)
        if problem:
            return 400, {}, {"message": problem}
        fault = self._fault(method, route_path)
        reply: Reply
        if fault:
            reply = fault.status, fault.headers, fault.body
        elif user is None:
            reply = 401, {}, {"message": "Bad credentials"}
        else:
            reply = self._route(method, route_path, query, user, body)
        status, headers, payload = reply
        self._validate_response(request, route_path, status, headers, payload)
        return status, headers, payload

    def _validate_request(self, request: MockRequest) -> str | None:
        try:
            self.spec.api.validate_request(request)
        except Exception as exc:  # openapi-core raises several unrelated types
            message = f"request {request.method.upper()} {request.path}: {_cause(exc)}"
            self.state.errors.append(message)
            return message
        return None

    def _validate_response(
        self, request: MockRequest, path: str, status: int, headers: dict[str, str], payload: Any
    ) -> None:
        if status >= 400 and not self._documented(request.method, path, status):
            # Errors GitHub sends but does not describe for this operation (404 on DELETE, 502,
            # secondary rate limits): they must still have GitHub's basic-error shape.
            if not (isinstance(payload, dict) and isinstance(payload.get("message"), str)):
                self.state.errors.append(f"error {status} without a message: {payload!r}")
            return
        data = json.dumps(payload).encode() if payload is not None else b""
        response = MockResponse(
            data,
            status_code=status,
            headers=headers,
            content_type="application/json" if data else "",
        )
        try:
            self.spec.api.validate_response(request, response)
        except Exception as exc:
            self.state.errors.append(
                f"response {status} to {request.method.upper()} {request.path}: {_cause(exc)}"
            )

    def _documented(self, method: str, path: str, status: int) -> bool:
        for pattern, route in self.spec.routes:
            if pattern.fullmatch(path) and method in self.spec.document["paths"][route]:
                return self.spec.documents(route, method, status)
        return False

    def _fault(self, method: str, path: str) -> Fault | None:
        for fault in self.state.faults:
            if fault.method == method and fault.path.search(path):
                self.state.faults.remove(fault)
                return fault
        return None

    def _user(self, headers: dict[str, str]) -> User | None:
        auth = headers.get("authorization", "")
        scheme, _, token = auth.partition(" ")
        if scheme.lower() not in ("token", "bearer"):
            return None
        return self.state.users.get(token.strip())

    # --- REST routes ---

    def _route(self, method: str, path: str, query: str, user: User, body: bytes) -> Reply:
        base = f"/repos/{self.owner}/{self.repo}"
        for pattern, verb, handler in self._routes():
            found = re.fullmatch(base + pattern, path)
            if found and verb == method:
                return handler(user, found, query, _json(body))
        # reviewer should only call what the fake serves: anything else is a surprise request.
        self.state.errors.append(f"unexpected endpoint: {method} {path}")
        return 404, {}, {"message": "Not Found", "documentation_url": "x"}

    def _routes(self) -> list[tuple[str, str, Callable[..., Reply]]]:
        return [
            (r"/issues/(\d+)/comments", "GET", self._list_comments),
            (r"/issues/(\d+)/comments", "POST", self._create_comment),
            (r"/issues/comments/(\d+)", "GET", self._get_comment),
            (r"/issues/comments/(\d+)", "PATCH", self._edit_comment),
            (r"/issues/comments/(\d+)", "DELETE", self._delete_comment),
            (r"/statuses/([0-9a-f]+)", "POST", self._create_status),
            (r"/check-runs", "POST", self._create_check_run),
            (r"/pulls/(\d+)", "GET", self._get_pull),
        ]

    def _list_comments(self, user: User, found: re.Match[str], query: str, _: Any) -> Any:
        args = _query(query)
        per_page = min(100, int(args.get("per_page", "30")))
        page = int(args.get("page", "1"))
        everything = self.comments(int(found[1]))
        chunk = everything[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(everything):
            link = f"{self.url}/repos/{self.repository}/issues/{found[1]}/comments"
            headers["Link"] = f'<{link}?per_page={per_page}&page={page + 1}>; rel="next"'
        return 200, headers, [self._comment_json(c) for c in chunk]

    def _create_comment(self, user: User, found: re.Match[str], _: str, data: Any) -> Any:
        body = data["body"]
        too_long = self._too_long(body)
        if too_long:
            return too_long
        comment = self._store(int(found[1]), user, body)
        return 201, {"Location": self._comment_json(comment)["url"]}, self._comment_json(comment)

    def _get_comment(self, user: User, found: re.Match[str], _: str, __: Any) -> Any:
        comment = self.state.comments.get(int(found[1]))
        if comment is None:
            return 404, {}, {"message": "Not Found", "documentation_url": "x"}
        return 200, {}, self._comment_json(comment)

    def _edit_comment(self, user: User, found: re.Match[str], _: str, data: Any) -> Any:
        comment = self.state.comments.get(int(found[1]))
        if comment is None:
            return 404, {}, {"message": "Not Found", "documentation_url": "x"}
        too_long = self._too_long(data["body"])
        if too_long:
            return too_long
        self._note_foreign(user, comment, "edit")
        comment.body = data["body"]
        comment.updated = next(self._clock)
        return 200, {}, self._comment_json(comment)

    def _delete_comment(self, user: User, found: re.Match[str], _: str, __: Any) -> Any:
        comment = self.state.comments.pop(int(found[1]), None)
        if comment is None:
            return 404, {}, {"message": "Not Found", "documentation_url": "x"}
        self._note_foreign(user, comment, "delete")
        return 204, {}, None

    def _create_status(self, user: User, found: re.Match[str], _: str, data: Any) -> Any:
        status = self.spec.example("status")
        status.update(
            id=next(self._ids),
            state=data["state"],
            context=data.get("context", "default"),
            description=data.get("description"),
            target_url=data.get("target_url"),
            creator=self._user_json(user),
        )
        self.state.statuses.append({"sha": found[1], **status})
        return 201, {}, status

    def _create_check_run(self, user: User, found: re.Match[str], _: str, data: Any) -> Any:
        run = self.spec.example("check-run")
        run.update(
            id=next(self._ids),
            name=data["name"],
            head_sha=data["head_sha"],
            status=data.get("status", "queued"),
            conclusion=data.get("conclusion"),
            details_url=data.get("details_url"),
        )
        run["output"].update(title=data["output"]["title"], summary=data["output"]["summary"])
        self.state.check_runs.append({**run, "output": dict(data["output"])})
        return 201, {}, run

    def _get_pull(self, user: User, found: re.Match[str], _: str, __: Any) -> Any:
        number = int(found[1])
        if number not in self.state.pulls:
            return 404, {}, {"message": "Not Found", "documentation_url": "x"}
        pull = self.spec.example("pull-request")
        pull["number"] = number
        pull["head"]["sha"] = self.state.pulls[number]
        if number in self.state.bases:
            pull["base"]["ref"], pull["base"]["sha"] = self.state.bases[number]
        pull["state"] = "closed" if number in self.state.closed else "open"
        pull["mergeable"] = number not in self.state.conflicting
        pull["requested_teams"] = []  # the example's team lacks the `type` its schema requires
        return 200, {}, pull

    # --- GraphQL ---

    def _graphql(self, user: User | None, body: bytes) -> tuple[int, dict[str, str], Json]:
        if user is None:
            return 401, {}, {"message": "Bad credentials"}
        request = _json(body)
        query = " ".join(str(request.get("query", "")).split())
        variables = request.get("variables") or {}
        for pattern, handler in _GRAPHQL:
            if re.fullmatch(pattern, query):
                return 200, {}, {"data": handler(self, user, variables)}
        self.state.errors.append(f"unexpected GraphQL operation: {query}")
        return 400, {}, {"message": "unexpected GraphQL operation"}

    def _viewer(self, user: User, _: Json) -> Json:
        # GraphQL names bots without the "[bot]" suffix REST shows: mimic that.
        return {"viewer": {"login": user.login.removesuffix("[bot]")}}

    def _nodes(self, user: User, variables: Json) -> Json:
        ids = variables.get("ids")
        assert isinstance(ids, list) and all(isinstance(i, str) for i in ids), variables
        by_node = {_node_id(c.id): c for c in self.state.comments.values()}
        return {
            "nodes": [
                {"id": i, "isMinimized": by_node[i].minimized} if i in by_node else None
                for i in ids
            ]
        }

    def _minimize(self, user: User, variables: Json) -> Json:
        data = variables.get("input") or {}
        assert set(data) == {"subjectId", "classifier"}, data
        assert data["classifier"] in (
            "SPAM",
            "ABUSE",
            "OFF_TOPIC",
            "OUTDATED",
            "DUPLICATE",
            "RESOLVED",
        ), data
        comment = next(
            c for c in self.state.comments.values() if _node_id(c.id) == data["subjectId"]
        )
        self._note_foreign(user, comment, "minimize")
        comment.minimized = True
        return {"minimizeComment": {"minimizedComment": {"isMinimized": True}}}

    # --- representation ---

    def _store(self, number: int, user: User, body: str) -> Comment:
        stamp = next(self._clock)
        comment = Comment(next(self._ids), number, user, body, stamp, stamp)
        self.state.comments[comment.id] = comment
        self.state.largest_body = max(self.state.largest_body, len(body))
        return comment

    def _too_long(self, body: str) -> tuple[int, dict[str, str], Json] | None:
        self.state.largest_body = max(self.state.largest_body, len(body))
        if len(body) <= COMMENT_LIMIT:
            return None
        error = {
            "resource": "IssueComment",
            "code": "custom",
            "field": "body",
            "message": "body is too long (maximum is 65536 characters)",
        }
        return (
            422,
            {},
            {
                "message": "Validation Failed",
                "errors": [error],
                "documentation_url": "https://docs.github.com/rest",
            },
        )

    def _note_foreign(self, user: User, comment: Comment, what: str) -> None:
        if comment.user.login != user.login:
            self.state.foreign_writes.append(
                f"{user.login} {what} {comment.user.login}'s {comment.id}"
            )

    def _comment_json(self, comment: Comment) -> Json:
        data = self.spec.example("issue-comment")
        api = f"{self.url}/repos/{self.repository}"
        data.update(
            id=comment.id,
            node_id=_node_id(comment.id),
            url=f"{api}/issues/comments/{comment.id}",
            html_url=f"https://github.test/{self.repository}/pull/{comment.number}"
            f"#issuecomment-{comment.id}",
            issue_url=f"{api}/issues/{comment.number}",
            body=comment.body,
            user=self._user_json(comment.user),
            created_at=_time(comment.created),
            updated_at=_time(comment.updated),
            author_association="NONE",
        )
        data.pop("pin", None)
        if self.rest_minimized:
            data["minimized"] = {"reason": "outdated"} if comment.minimized else None
        else:
            data.pop("minimized", None)
        return data

    def _user_json(self, user: User) -> Json:
        data = self.spec.example("simple-user")
        data.update(login=user.login, id=user.id, type=user.type, node_id=f"U_{user.id}")
        return data


_GRAPHQL: list[tuple[str, Callable[[FakeGitHub, User, Json], Json]]] = [
    (r"query \{ viewer \{ login \} \}", FakeGitHub._viewer),
    (
        r"query\(\$ids: \[ID!\]!\) \{ nodes\(ids: \$ids\) \{ \.\.\. on IssueComment "
        r"\{ id isMinimized \} \} \}",
        FakeGitHub._nodes,
    ),
    (
        r"mutation Mutation\(\$input: MinimizeCommentInput!\) \{ minimizeComment\(input: \$input\) "
        r"\{ minimizedComment \{ isMinimized \} \} \}",
        FakeGitHub._minimize,
    ),
]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def __init__(self, fake: FakeGitHub, *args: Any) -> None:
        self.fake = fake
        super().__init__(*args)

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes: without this, Nagle + delayed ACK add 40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {key.lower(): value for key, value in self.headers.items()}
        status, extra, data = self.fake.handle(self.command, self.path, headers, body)
        self.send_response(status)
        for key, value in extra.items():
            self.send_header(key, value)
        if data:
            self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the fake keeps its own log."""


def _query(query: str) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(query).items()}


def _json(body: bytes) -> Any:
    return json.loads(body) if body else {}


def _node_id(comment_id: int) -> str:
    return f"IC_{comment_id}"


def _time(stamp: int) -> str:
    moment = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    return (moment + datetime.timedelta(seconds=stamp)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc
    errors = getattr(cause, "schema_errors", None)
    if errors:
        return "; ".join(f"{list(e.absolute_path)}: {e.message[:200]}" for e in errors[:10])
    return str(cause)[:500]
