"""Run a command with defaults from an env file: `python -m superdispatch.envfile FILE -- CMD…`.

Only variables the environment does not already set are taken from the file, so a real
configuration always wins. `make run` uses it to start on the demo configuration.
"""

import os
import sys

import environ


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "--":
        raise SystemExit("usage: python -m superdispatch.envfile FILE -- COMMAND [ARGS…]")
    environ.Env.read_env(argv[0], overwrite=False)
    data_dir = os.environ.get("SUPERDISPATCH_DATA_DIR", "")
    if data_dir and not os.path.isabs(data_dir):
        os.environ["SUPERDISPATCH_DATA_DIR"] = os.path.abspath(data_dir)
    os.execvp(argv[2], argv[2:])


if __name__ == "__main__":
    main(sys.argv[1:])
