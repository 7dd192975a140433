"""What `ctxpane doctor` reports: one Check per question asked of the server, gathered in a Report.

Its own module so that the checks (doctor.py, doctor_gateway.py) build results without importing each other.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal, TypeAlias

from tui.context.json_types import JSONObject

Status: TypeAlias = Literal["ok", "warn", "fail", "skip"]  # warn and fail make doctor exit with 1


@dataclass
class Check:
    name: str
    status: Status
    detail: str
    data: JSONObject = field(default_factory=dict)


@dataclass
class Report:
    url: str
    server: JSONObject
    checks: list[Check]

    @property
    def exit_code(self) -> int:
        return 1 if any(c.status in ("fail", "warn") for c in self.checks) else 0

    def to_json(self) -> JSONObject:
        return {"url": self.url, "server": self.server, "checks": [asdict(c) for c in self.checks],
                "exit_code": self.exit_code}
