INSERT INTO customers (name, email) VALUES ('Jane Doe', 'jane.doe@example.com');
