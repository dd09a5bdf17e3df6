"""The builtin SSH client: paramiko in this process, behind the same `SshExecutor` protocol as
the system OpenSSH client (`ssh_client = "builtin"`)."""

from overbrainer.targets.ssh_builtin.executor import BuiltinSshExecutor, open_builtin

__all__ = ["BuiltinSshExecutor", "open_builtin"]
