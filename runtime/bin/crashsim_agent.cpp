// crashsim-agent: placeholder until the agent runtime lands.
int main() { return 2; }
