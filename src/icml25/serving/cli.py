"""``icml25 serve``: start an EPD (or PD / aggregated) serving system of worker processes behind an
OpenAI-compatible HTTP server on 127.0.0.1 (Ctrl-C stops the server and every worker)."""

from __future__ import annotations

import argparse
import sys


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``serve`` on an argparse subparsers object."""
    parser = subparsers.add_parser("serve", help="OpenAI-compatible EPD serving of a tiny LMM on 127.0.0.1",
                                   description="Serve a tiny random-weight LMM with EPD disaggregation.")
    parser.add_argument("--mode", choices=("epd", "pd", "aggregated"), default="epd")
    parser.add_argument("--encode", type=int, default=1, help="encode workers (epd)")
    parser.add_argument("--prefill", type=int, default=1, help="prefill workers (epd, pd)")
    parser.add_argument("--decode", type=int, default=1, help="decode workers (or aggregated workers)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--seed", type=int, default=0, help="model weights seed")
    return parser


def main(args: argparse.Namespace) -> int:
    """Run ``icml25 serve`` until interrupted; 0 on a clean stop, 2 on bad input."""
    import uvicorn

    from icml25.serving.engine import ServingSystem
    from icml25.serving.server import create_app

    try:
        system = ServingSystem(args.mode, n_encode=args.encode, n_prefill=args.prefill, n_decode=args.decode,
                               seed=args.seed)
    except (TypeError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    with system:
        print(f"serving {args.mode} ({system.pids}) at http://127.0.0.1:{args.port}/v1", flush=True)
        uvicorn.run(create_app(system), host="127.0.0.1", port=args.port, log_level="warning")
    return 0
