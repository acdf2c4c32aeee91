"""What every study script shares: where the binaries are, the
environment mpirun needs as root, and the stamp (command, date, machine)
that every result file carries."""
import datetime
import os
import platform

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release")
MHETA = os.path.join(BIN, "mheta")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
QUICK = os.environ.get("STUDY_QUICK") == "1"


def stamp(command):
    """The command that regenerates a result, the date (UTC) and the machine."""
    return {
        "command": command,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.node()}: {os.cpu_count()} cores, {platform.platform()}",
    }
