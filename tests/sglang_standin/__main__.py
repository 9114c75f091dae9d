from tests.sglang_standin.cli import main

main()
