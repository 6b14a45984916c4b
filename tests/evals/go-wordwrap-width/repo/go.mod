module example.com/textfmt

go 1.19
