module ringkeeper

go 1.19
