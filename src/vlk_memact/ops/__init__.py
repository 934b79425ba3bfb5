"""Operations on an installation: doctor and backup (faults.py), host checks, export and import.
May import the engine, store/, core/, config and hosts/ installers; never cli/ or server/."""
