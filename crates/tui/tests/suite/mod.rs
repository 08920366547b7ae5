mod exec;
