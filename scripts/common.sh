# Shell helpers shared by scripts/test and scripts/demo (sourced, not run).

die() { echo "$(basename "$0"): $*" >&2; exit 1; }

require_redis() {
  command -v redis-server >/dev/null || die "redis-server not found: install Redis 6.2+ (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis); djqueue's scripts start their own private server and never touch yours"
}

find_python() {  # find_python 3.13 -> the path of a working python3.13, or nothing
  local v=$1 candidate
  for candidate in "python$v" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/"python$v" /root/.pyenv/versions/"$v".*/bin/"python$v"; do
    # pyenv shims exist for versions that are not active: check the interpreter really runs.
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c "import venv" >/dev/null 2>&1; then
      command -v "$candidate"
      return
    fi
  done
}
