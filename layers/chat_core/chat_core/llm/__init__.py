"""The model: an OpenAI-compatible client, the offline model, key resolution. Only this package calls one."""
