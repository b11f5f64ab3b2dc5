"""`mgrag keys` (the HTTP API's keys) and `mgrag mcp` (the MCP server on stdio): the command line of the API that
`mgrag serve` serves under /v1 (docs/api.md)."""
from __future__ import annotations

import sys
import time

from services.keys import Keys
from services.users import Users

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): core.settings,
# api.mcp_server


def cmd_keys(args) -> int:
    """Make, list and revoke API keys. A key belongs to a user (one of the web app's users when it has any) and
    sees what that user sees; it is shown once, when made."""
    from core.settings import Settings

    settings = Settings(**({"data_dir": args.data_dir} if args.data_dir else {}))
    secrets = settings.data_dir / ".secrets"
    keys = Keys(secrets / "keys.sqlite")
    try:
        if args.action == "list":
            rows = keys.list()
            if not rows:
                print("(no API keys: `mgrag keys add NAME --user USER` makes one)")
            for k in rows:
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(k.created))
                used = time.strftime("%Y-%m-%d %H:%M", time.localtime(k.last_used)) if k.last_used else "never"
                state = "revoked" if k.revoked else "active"
                print(f"{k.name}\tuser {k.user}\t{k.prefix}…\tmade {when}\tlast used {used}\t{state}")
        elif args.action == "revoke":
            keys.revoke(args.name)
            print(f"revoked {args.name}")
        else:
            if not args.user:
                raise ValueError("name the key's user: --user USER (what the key may see is what the user sees)")
            users = Users(secrets / "users.sqlite")
            if users and args.user not in users.names():
                raise ValueError(f"no user {args.user!r}; the web app's users are: {', '.join(users.names())} "
                                 "(`mgrag users add` makes one)")
            key = keys.add(args.name, args.user)
            print(key)
            print(f"(API key {args.name!r} for user {args.user}: shown this once; send it as "
                  "'Authorization: Bearer …' to /v1 of `mgrag serve`)", file=sys.stderr)
            if not users:
                print("note: this server has no user accounts, so files uploaded in a browser belong to that "
                      "browser and no API key searches them; the key searches the shared library (`mgrag "
                      "ingest`) and what it uploads itself (POST /v1/documents). With accounts (`mgrag users "
                      "add`), a key sees what its user uploads in the browser.", file=sys.stderr)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def cmd_mcp(args) -> int:
    from api.mcp_server import main

    return main(["--url", args.url] if args.url else [])


def add_api_parsers(sub) -> None:
    s = sub.add_parser("keys", help="API keys of the HTTP API (/v1; docs/api.md)",
                       description="`mgrag keys add NAME --user USER` makes a key (printed once), `list` shows them "
                                   "(never the keys), `revoke NAME` ends one.")
    s.add_argument("action", choices=("add", "list", "revoke"))
    s.add_argument("name", nargs="?", default="")
    s.add_argument("--user", help="the user the key belongs to (add)")
    s.set_defaults(func=cmd_keys)

    s = sub.add_parser("mcp", help="MCP server on stdio: ask, search and list_documents through a running "
                                   "`mgrag serve` (API key in MGRAG_API_KEY)")
    s.add_argument("--url", help="the running `mgrag serve` (env MGRAG_URL; default http://127.0.0.1:7860)")
    s.set_defaults(func=cmd_mcp)
