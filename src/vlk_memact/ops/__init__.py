"""Operations on an installation: doctor and backup (commands.py, doctor.py), host checks, export and import.
May import the engine, store/, core/, config and hosts/ installers; never cli/ or server/."""
