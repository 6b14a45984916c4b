module example.com/thumbs

go 1.19
