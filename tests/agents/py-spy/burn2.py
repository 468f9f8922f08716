"""Two threads for py-spy: the main thread burns CPU in burn.hot_loop (~3/4) and
burn.cold_loop (~1/4); a second thread, "sleeper", sleeps the whole time.

  py-spy record --format raw -o out.txt -- python3 burn2.py [seconds]
  py-spy record --format raw --idle -o out-idle.txt -- python3 burn2.py [seconds]
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import burn  # noqa: E402


def sleeper(seconds):
    time.sleep(seconds)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30
    t = threading.Thread(target=sleeper, args=(seconds + 1,), name="sleeper", daemon=True)
    t.start()
    burn.burn(seconds)


if __name__ == "__main__":
    main()
