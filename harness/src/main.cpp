// crashsim CLI: placeholder until the harness lands.
int main() { return 2; }
