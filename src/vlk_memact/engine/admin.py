"""Administration: the retention policy over every session and giving space back (vlk-memact maintenance)."""

from __future__ import annotations

import logging

from ..core.model import MaintenanceResult
from .base import MemoryBase

log = logging.getLogger(__name__)


class Administration(MemoryBase):
    """Work on the whole store rather than on one session."""

    def maintenance(self, vacuum: bool = False) -> MaintenanceResult:
        """Apply the retention policy to every session, then give the space back to the file system."""
        with self.store.write() as tx:
            slots, contents = tx.prune(None, self.settings.retention_past_per_session, self.settings.retention_days)
        self.store.optimize(vacuum)
        log.info("Maintenance: pruned %d PAST slots and %d contents", slots, contents)
        return MaintenanceResult(slots, contents, self.settings.retention_days,
                                 self.settings.retention_past_per_session, vacuum)
