module example.com/langprompt

go 1.26.8

require github.com/junction-router/junction v0.0.0-00010101000000-000000000000

replace github.com/junction-router/junction => ../../..
